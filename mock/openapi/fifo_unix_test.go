//go:build unix

package openapi

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// Ensure a $ref to a FIFO is a load problem, not a load that waits for a writer forever.
func TestLoad_RefToFIFO(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "pipe.yaml"), 0o600); err != nil {
		t.Skip("no FIFO here:", err)
	}
	spec := filepath.Join(dir, "spec.yaml")
	doc := "openapi: 3.1.0\ninfo: {title: t, version: \"1\"}\npaths:\n  /a:\n    get:\n      responses:\n        \"200\":\n          $ref: \"pipe.yaml#/R\"\n"
	if err := os.WriteFile(spec, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Load(spec)
	if err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("err = %v, want the FIFO refused", err)
	}
}
