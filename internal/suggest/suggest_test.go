package suggest

import (
	"strings"
	"testing"
)

// Ensure Distance counts insertions, deletions and substitutions, is symmetric, and compares
// at most the first 128 bytes of each name.
func TestDistance(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("a", 128)
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"", "port", 4},
		{"port", "port", 0},
		{"prot", "port", 2},
		{"por", "port", 1},
		{"ports", "port", 1},
		{"kitten", "sitting", 3},
		{"server.addr", "server_addr", 1},
		{"é", "e", 2}, // bytes, not runes
		{long + "xyz", long, 0},
		{long + "xyz", long + "abc", 0},
		{long[1:] + "b", long, 1},
	} {
		if got := Distance(tc.a, tc.b); got != tc.want {
			t.Errorf("Distance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
		if got := Distance(tc.b, tc.a); got != tc.want {
			t.Errorf("Distance(%q, %q) = %d, want %d (not symmetric)", tc.b, tc.a, got, tc.want)
		}
	}
}
