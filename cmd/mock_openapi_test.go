package cmd

import (
	"os"
	"path/filepath"
	"testing"
)

// Ensure mock validate --openapi exits 0 for a valid description, 1 with each problem at its
// line for one that cannot be served, and that mock serve refuses such a description (2).
func TestMockValidate_OpenAPI(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	good := filepath.Join(dir, "good.yaml")
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(good, []byte("openapi: 3.1.0\ninfo: {title: t, version: \"1\"}\npaths:\n  /a:\n    get:\n      responses:\n        \"200\": {description: ok}\n"), 0o644)
	os.WriteFile(bad, []byte("openapi: 3.0.3\ninfo: {title: t, version: \"1\"}\npaths:\n  /a:\n    get:\n      responses:\n        \"200\":\n          $ref: \"#/components/responses/Gone\"\n"), 0o644)
	for _, tc := range []struct {
		name     string
		args     []string
		wantCode int
		wantOut  []string
		wantErr  []string
	}{
		{"Valid", []string{"mock", "validate", "--openapi", good}, 0, []string{"good.yaml: valid OpenAPI 3.1.0, 1 operation(s)"}, nil},
		{"Invalid", []string{"mock", "validate", "--openapi", bad}, exitFailure, nil, []string{"bad.yaml:8: /paths/~1a/get/responses/200/$ref:", "Gone", "1 OpenAPI description(s) cannot be served"}},
		{"InvalidJSON", []string{"mock", "validate", "--json", "--openapi", bad}, exitFailure, []string{`"isValid": false`, `"line": 8`}, nil},
		{"Both", []string{"mock", "validate", "--openapi", good, "--openapi", bad}, exitFailure, []string{"good.yaml: valid"}, []string{"bad.yaml:8:"}},
		{"ServeInvalid", []string{"mock", "serve", "--openapi", bad, "--port", "0"}, exitUsage, nil, []string{"bad.yaml:8:", "cannot be served"}},
		{"DynamicNeedsSpec", []string{"mock", "serve", "--dynamic", "--port", "0"}, exitUsage, nil, []string{"--openapi"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := runApp(t, func(string) string { return "" }, tc.args...)
			r.expect(t, tc.wantCode, tc.wantOut, tc.wantErr)
		})
	}
}
