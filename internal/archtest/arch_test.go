package archtest

import (
	"errors"
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/acme/app"

// goList runs `go list args...` and returns its output; the test fails when it cannot (a
// check that does not run must not pass).
func goList(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command("go", append([]string{"list"}, args...)...).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("go list %s: %v\n%s", strings.Join(args, " "), err, ee.Stderr)
		}
		t.Fatalf("go list %s: %v", strings.Join(args, " "), err)
	}
	return string(out)
}

// Ensure the binary links no test code: neither testing (nor its subpackages) nor
// net/http/httptest is among the dependencies of the main package, so that no test helper
// (and none of the flags testing registers) ships in app.
func TestBinaryLinksNoTestPackages(t *testing.T) {
	t.Parallel()
	deps := strings.Fields(goList(t, "-deps", module))
	if len(deps) == 0 {
		t.Fatal("go list -deps listed nothing")
	}
	for _, dep := range deps {
		if dep == "testing" || strings.HasPrefix(dep, "testing/") || dep == "net/http/httptest" {
			t.Errorf("the binary links %s (go list -deps %s)", dep, module)
		}
	}
}

// Ensure no package imports what it must not: services never import the HTTP layer, the
// commands, configuration or terminal styling; apperr, suggest and redact import nothing of
// ours, nor do the fake providers, which also import no test package; the public mock
// package never imports internal/ (but suggest, a leaf);
// the HTTP layer never opens the store itself.
func TestImportDirection(t *testing.T) {
	out := goList(t, "-f", `{{.ImportPath}} {{join .Imports " "}}`, module+"/...")
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
		{module + "/internal/ai/fakeprovider", []string{module + "/", "testing", "httptest"}}, // linked into app by the built-in mock
		{module + "/internal/suggest", []string{module + "/"}},
		{module + "/internal/redact", []string{module + "/"}},
		{module + "/internal/metrics", []string{module + "/"}},
		{module + "/docs", []string{module + "/"}},
		{module + "/internal/httpapi", []string{"/internal/store", "/cmd", "lipgloss"}},
		{module + "/mock", []string{module + "/internal", module + "/cmd"}},
	}
	// leaves import nothing of ours (a rule above keeps them so): any package may use them.
	leaves := map[string]bool{module + "/internal/suggest": true}
	checked := 0
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
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
