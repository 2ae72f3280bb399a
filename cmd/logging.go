package cmd

import (
	"io"
	"log/slog"
	"os"

	"github.com/acme/app/internal/config"
)

// newLogger writes structured logs to w: text on a terminal, JSON otherwise, unless set.
func newLogger(w io.Writer, c config.Log) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(c.Level))
	opts := &slog.HandlerOptions{Level: level}
	format := c.Format
	if format == "" {
		format = "json"
		if isTerminal(w) {
			format = "text"
		}
	}
	if format == "text" {
		return slog.New(slog.NewTextHandler(w, opts))
	}
	return slog.New(slog.NewJSONHandler(w, opts))
}

// isTerminal reports whether w is a character device (a terminal), looking through the
// progress-line guard that wraps stderr.
func isTerminal(w io.Writer) bool {
	if g, ok := w.(*lineGuard); ok {
		w = g.w
	}
	if c, ok := w.(*checkedWriter); ok {
		w = c.w
	}
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
