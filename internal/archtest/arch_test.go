package archtest

import (
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/acme/app"

// Ensure no package imports what it must not: services never import the HTTP layer, the
// commands, configuration or terminal styling; apperr and suggest import nothing of
// ours; the public mock package never imports internal/ (but suggest, a leaf);
// the HTTP layer never opens the store itself.
func TestImportDirection(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, module+"/...").Output()
	if err != nil {
		t.Skipf("go list unavailable: %v", err)
	}
	rules := []struct {
		pkgPrefix string
		forbidden []string
	}{
		{module + "/internal/auth", []string{"/internal/httpapi", "/cmd", "/internal/config", "lipgloss"}},
		{module + "/internal/ai", []string{"/internal/httpapi", "/cmd", "/internal/config", "lipgloss"}},
		{module + "/internal/usage", []string{"/internal/httpapi", "/cmd", "/internal/config", "lipgloss"}},
		{module + "/internal/dbcheck", []string{"/internal/httpapi", "/cmd", "/internal/config", "lipgloss"}},
		{module + "/internal/templates", []string{"/internal/httpapi", "/cmd", "/internal/config", "lipgloss"}},
		{module + "/internal/store", []string{"/internal/httpapi", "/cmd", "/internal/config", "lipgloss"}},
		{module + "/internal/keys", []string{"/internal/httpapi", "/cmd", "/internal/config", "lipgloss"}},
		{module + "/internal/budget", []string{"/internal/httpapi", "/cmd", "/internal/config", "lipgloss", "/internal/ai"}},
		{module + "/internal/gateway", []string{"/internal/httpapi", "/cmd", "/internal/config", "lipgloss", "/internal/store"}},
		{module + "/internal/apperr", []string{module + "/"}},
		{module + "/internal/suggest", []string{module + "/"}},
		{module + "/internal/metrics", []string{module + "/"}},
		{module + "/docs", []string{module + "/"}},
		{module + "/internal/httpapi", []string{"/internal/store", "/cmd", "lipgloss"}},
		{module + "/mock", []string{module + "/internal", module + "/cmd"}},
	}
	// leaves import nothing of ours (a rule above keeps them so): any package may use them.
	leaves := map[string]bool{module + "/internal/suggest": true}
	checked := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		pkg, imports := fields[0], fields[1:]
		for _, r := range rules {
			if pkg != r.pkgPrefix && !strings.HasPrefix(pkg, r.pkgPrefix+"/") {
				continue
			}
			checked++
			for _, imp := range imports {
				for _, bad := range r.forbidden {
					if strings.Contains(imp, bad) && !strings.HasSuffix(imp, "/storetest") && !leaves[imp] {
						t.Errorf("%s imports %s (forbidden: %q)", pkg, imp, bad)
					}
				}
			}
		}
	}
	if checked == 0 {
		t.Fatal("no package was checked")
	}
}
