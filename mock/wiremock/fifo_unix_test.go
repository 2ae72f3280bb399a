//go:build unix

package wiremock

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// Ensure a body file that is a FIFO is refused at load, not opened: opening one waits for a
// writer, and a device has no size to check (/dev/zero would be read without end).
func TestLoad_BodyFileNotRegular(t *testing.T) {
	t.Parallel()
	dir := writeDir(t, map[string]string{
		"mappings/a.json": `{"request":{"urlPath":"/fifo"},"response":{"bodyFileName":"pipe"}}`,
		"__files/keep":    "",
	})
	if err := syscall.Mkfifo(filepath.Join(dir, "__files", "pipe"), 0o600); err != nil {
		t.Skip("no FIFO here:", err)
	}
	stubs, problems, err := Load(dir)
	if err != nil || stubs.Len() != 0 || len(problems) != 1 || !strings.Contains(problems[0].String(), "not a regular file") {
		t.Fatalf("err %v, %d served, problems %v: want the FIFO refused", err, stubs.Len(), problems)
	}
}
