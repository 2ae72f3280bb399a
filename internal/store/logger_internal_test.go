package store

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
)

// Ensure FerretDB's logger passes on errors only, each with the attributes and groups it was
// derived with, and drops the rest.
func TestFerretLogger(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	log := ferretLogger(slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})))
	conn := log.With("conn", 7).WithGroup("req").With("cmd", "insert")
	conn.Info("accepted")
	conn.Warn("unsupported")
	conn.Error("failed", "err", "boom")
	got := strings.TrimSpace(buf.String())
	if strings.Count(got, "\n") != 0 {
		t.Fatalf("more than the error passed on:\n%s", got)
	}
	for _, want := range []string{`"component":"ferretdb"`, `"conn":7`, `"req":{"cmd":"insert","err":"boom"}`, `"msg":"failed"`} {
		if !strings.Contains(got, want) {
			t.Errorf("%s lacks %s", got, want)
		}
	}
	if log.Handler().Enabled(context.Background(), slog.LevelWarn) {
		t.Error("warnings enabled")
	}
}
