package mockfile

import (
	"fmt"
	"strings"
	"testing"
)

// Ensure formatLen counts what makes printf's text long before it is made: written widths
// and precisions, widths taken from arguments (also by explicit index), and string arguments.
func TestFormatLen(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		format string
		args   []any
		want   int
	}{
		{"plain", nil, 5},
		{"%d", []any{7}, 2},
		{"%01000d", []any{7}, 7 + 1000},
		{"%5.300f", []any{1.5}, 7 + 5 + 300},
		{"%0*d", []any{4000, 7}, 4 + 4000},
		{"%[2]*[1]d", []any{7, 4000}, 9 + 4000},
		{"%-*d", []any{-4000, 7}, 4 + 4000},
		{"%s|%s", []any{"abc", "de"}, 5 + 5},
		{"%%%d", []any{1}, 4},
		{"%010000009d", []any{1}, 11 + 10000009}, // fmt pads this one, past its documented million
		{"%099999999999999999999d", []any{1}, 23 + maxMadeText + 1},
		{"%*d", []any{uint8(9), 1}, 3 + 9},
		{"%*d", []any{int64(-1 << 62), 1}, 3 + maxMadeText + 1},
		{"%[", nil, 2},
	} {
		if got := formatLen(tc.format, tc.args); got != tc.want {
			t.Errorf("formatLen(%q, %v) = %d, want %d", tc.format, tc.args, got, tc.want)
		}
	}
}

// FuzzFormatLen checks that formatLen never falls far below what fmt.Sprintf makes: the
// bound printf is refused by must hold whatever the format.
func FuzzFormatLen(f *testing.F) {
	for _, s := range []string{"%d", "%0100d", "%[2]*[1]d", "%*.*f", "%!%%[9]s", "%s%v%x%q"} {
		f.Add(s, 12, "text")
	}
	f.Fuzz(func(t *testing.T, format string, n int, s string) {
		if len(format) > 64 || len(s) > 64 || n > 4096 || n < -4096 {
			return
		}
		args := []any{n, s, n, s}
		out := fmt.Sprintf(format, args...)
		// fmt's own error notes (%!d(string=…), %!(EXTRA …)) repeat arguments and add a few
		// bytes per verb (%!v(MISSING) for the two bytes of %v): a small multiple at most, never a
		// width.
		if bound := 8*formatLen(format, args) + 256; len(out) > bound {
			t.Fatalf("Sprintf(%q) made %d bytes, over %d (formatLen %d)", format, len(out), bound, formatLen(format, args))
		}
		if strings.Count(format, "%") == 0 && out != format && !strings.Contains(out, "EXTRA") {
			t.Fatalf("a format without verbs changed: %q", out)
		}
	})
}
