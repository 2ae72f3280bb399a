package cmd

import "testing"

// Ensure terminalSafe escapes what a terminal acts on and keeps every other text as it is.
func TestTerminalSafe(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, in, want string }{
		{"OKPlain", "colour-picker", "colour-picker"},
		{"OKUnicode", "héllo 🎉 日本語 \u200d", "héllo 🎉 日本語 \u200d"},
		{"Escape", "a\x1b[31mb", `a\x1b[31mb`},
		{"OSC", "\x1b]52;c;aGk=\x07", `\x1b]52;c;aGk=\x07`},
		{"Lines", "a\nb\rc\td", `a\nb\rc\td`},
		{"DEL", "a\x7fb", `a\x7fb`},
		{"C1", "a\u009b2Jb\u0085", `a\u009b2Jb\u0085`},
		{"Bidi", "x\u202eyz\u2066\u200f", `x\u202eyz\u2066\u200f`},
		{"InvalidUTF8", "a\xffb\xc3", `a\xffb\xc3`},
		{"ReplacementCharacterKept", "a\uFFFDb", "a\uFFFDb"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := terminalSafe(tt.in); got != tt.want {
				t.Fatalf("terminalSafe(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}
