package cmd

import (
	"bytes"
	"io"
	"log/slog"
	"os"
	"testing"

	"github.com/acme/app/internal/config"
)

// Ensure the default log format is text on a character device, also behind stderr's
// progress-line guard, and JSON elsewhere; a format set in the configuration wins.
func TestNewLogger_Format(t *testing.T) {
	t.Parallel()
	// /dev/null is a character device, as a terminal is.
	tty, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tty.Close() })
	for _, tc := range []struct {
		name     string
		w        io.Writer
		format   string
		wantText bool
	}{
		{"Terminal", tty, "", true},
		{"TerminalBehindGuard", &lineGuard{w: tty}, "", true},
		{"Buffer", &bytes.Buffer{}, "", false},
		{"BufferBehindGuard", &lineGuard{w: &bytes.Buffer{}}, "", false},
		{"TerminalSetToJSON", &lineGuard{w: tty}, "json", false},
		{"BufferSetToText", &bytes.Buffer{}, "text", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newLogger(tc.w, config.Log{Level: "info", Format: tc.format}).Handler()
			if _, isText := h.(*slog.TextHandler); isText != tc.wantText {
				t.Errorf("handler %T, want text: %v", h, tc.wantText)
			}
		})
	}
}
