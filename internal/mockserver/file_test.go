package mockserver

import (
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/acme/app/mock"
	"github.com/acme/app/mock/mockfile"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// newTestServer serves a mock file (written to a temp dir) with httptest.
func newTestServer(t *testing.T, name, content string, edit func(*Options)) (*Server, *httptest.Server, string) {
	t.Helper()
	opts := Options{Logger: quiet}
	var path string
	if name != "" {
		path = filepath.Join(t.TempDir(), name)
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		opts.File = path
	}
	if edit != nil {
		edit(&opts)
	}
	s, err := New(opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	hs := httptest.NewServer(s)
	t.Cleanup(func() { hs.Close(); s.Close() })
	return s, hs, path
}

type answer struct {
	status int
	header http.Header
	body   string
}

func do(t *testing.T, method, url, body string, headers ...string) answer {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json") // the admin API takes only JSON
	}
	for i := 0; i+1 < len(headers); i += 2 {
		if headers[i] == "Host" {
			req.Host = headers[i+1] // net/http sends req.Host, not a Host header
			continue
		}
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return answer{resp.StatusCode, resp.Header, string(b)}
}

func decode[T any](t *testing.T, a answer) T {
	t.Helper()
	var v T
	if err := json.Unmarshal([]byte(a.body), &v); err != nil {
		t.Fatalf("decode %T from %q: %v", v, a.body, err)
	}
	return v
}

const yamlFile = `
config:
  delay: 0
  defaultHeaders: {X-Mock: "yes"}
mocks:
  "GET /users/:id":
    status: 200
    data: {id: "{{.Params.id}}", kind: user}
`

const jsonFile = `{
  "config": {"delay": 0},
  "mocks": {
    "GET /users/:id": {"status": 200, "data": {"id": "{{.Params.id}}", "kind": "user"}}
  }
}`

// Ensure the example of the issue works from YAML and from JSON: params templated, JSON
// Content-Type.
func TestLoad_YAMLAndJSON(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, file, content string }{
		{"YAML", "mocks.yaml", yamlFile},
		{"JSON", "mocks.json", jsonFile},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, hs, _ := newTestServer(t, tc.file, tc.content, nil)
			a := do(t, "GET", hs.URL+"/users/42", "")
			if got, want := a.status, 200; got != want {
				t.Fatalf("status=%d, want %d", got, want)
			}
			if got, want := a.body, `{"id":"42","kind":"user"}`; got != want {
				t.Fatalf("body=%s, want %s", got, want)
			}
			if ct := a.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
				t.Fatalf("Content-Type=%q, want application/json", ct)
			}
		})
	}
}

// Ensure every validation error path is reported with its code, route and line.
func TestParse_Errors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		file      string
		content   string
		wantCode  string
		wantRoute string
		wantLine  int
	}{
		{"YAMLSyntax", "m.yaml", "mocks:\n  \"GET /a\": {status: 200\n", mockfile.CodeSyntax, "", -1},
		{"JSONSyntax", "m.json", "{\n\"mocks\": {\n\"GET /a\": {\"status\": 200,}\n}\n}", mockfile.CodeSyntax, "", 3},
		{"TopLevelNotMapping", "m.yaml", "- a\n- b\n", mockfile.CodeType, "", 1},
		{"UnknownTopLevel", "m.yaml", "mock:\n  x: 1\n", mockfile.CodeUnknownKey, "", 1},
		{"MocksNotMapping", "m.yaml", "mocks: [1, 2]\n", mockfile.CodeType, "", 1},
		{"BadRouteKey", "m.yaml", "mocks:\n  \"/no-method\": {status: 200}\n", mock.VInvalidRouteKey, "/no-method", 2},
		{"BadMethod", "m.yaml", "mocks:\n  \"FETCH /a\": {status: 200}\n", mock.VInvalidMethod, "FETCH /a", 2},
		{"MalformedPath", "m.yaml", "mocks:\n  \"GET a/b\": {status: 200}\n", mock.VMalformedPath, "GET a/b", 2},
		{"DuplicateParam", "m.yaml", "mocks:\n  \"GET /a/:id/:id\": {status: 200}\n", mock.VDuplicateParam, "GET /a/:id/:id", 2},
		{"DuplicateRoute", "m.yaml", "mocks:\n  \"GET /a\": {status: 200}\n  \"GET /a\": {status: 201}\n", "", "", 0},
		{"SpecNotMapping", "m.yaml", "mocks:\n  \"GET /a\": 200\n", mockfile.CodeType, "GET /a", 2},
		{"UnknownSpecField", "m.yaml", "mocks:\n  \"GET /a\":\n    stauts: 200\n", mockfile.CodeUnknownKey, "GET /a", 3},
		{"StatusNotInt", "m.yaml", "mocks:\n  \"GET /a\":\n    status: ok\n", mockfile.CodeType, "GET /a", 3},
		{"StatusRange", "m.yaml", "mocks:\n  \"GET /a\":\n    status: 700\n", mockfile.CodeStatus, "GET /a", 3},
		{"BadDelay", "m.yaml", "mocks:\n  \"GET /a\":\n    delay: soon\n", mockfile.CodeDelay, "GET /a", 3},
		{"BadDelayRange", "m.yaml", "mocks:\n  \"GET /a\":\n    delay: 400-100\n", mockfile.CodeDelay, "GET /a", 3},
		{"BadTemplate", "m.yaml", "mocks:\n  \"GET /a\":\n    data:\n      x: \"{{.Params.id\"\n", mockfile.CodeTemplate, "GET /a", 4},
		{"UnknownTemplateFunc", "m.yaml", "mocks:\n  \"GET /a\":\n    data: {x: \"{{nosuch}}\"}\n", mockfile.CodeTemplate, "GET /a", 3},
		{"BadHeaderTemplate", "m.yaml", "mocks:\n  \"GET /a\":\n    headers: {X: \"{{\"}\n", mockfile.CodeTemplate, "GET /a", 3},
		{"HeadersNotStrings", "m.yaml", "mocks:\n  \"GET /a\":\n    headers: {X: [1]}\n", mockfile.CodeType, "GET /a", 3},
		{"DataAndGenerate", "m.yaml", "mocks:\n  \"GET /a\":\n    data: {}\n    generate: {kind: user}\n", mockfile.CodeConflict, "GET /a", 4},
		{"DataAndBody", "m.yaml", "mocks:\n  \"GET /a\":\n    data: {}\n    body: x\n", mockfile.CodeConflict, "GET /a", 4},
		{"GenerateUnknownKind", "m.yaml", "mocks:\n  \"GET /a\":\n    generate: {kind: dragon}\n", mockfile.CodeGenerate, "GET /a", 3},
		{"GenerateNoKind", "m.yaml", "mocks:\n  \"GET /a\":\n    generate: {count: 2}\n", mockfile.CodeGenerate, "GET /a", 3},
		{"GenerateBadCount", "m.yaml", "mocks:\n  \"GET /a\":\n    generate: {kind: user, count: -1}\n", mockfile.CodeGenerate, "GET /a", 3},
		{"SequenceEmpty", "m.yaml", "mocks:\n  \"GET /a\":\n    sequence: []\n", mockfile.CodeSequence, "GET /a", 3},
		{"SequenceNested", "m.yaml", "mocks:\n  \"GET /a\":\n    sequence:\n      - sequence: [{status: 200}]\n", mockfile.CodeSequence, "GET /a", 4},
		{"SequenceWithData", "m.yaml", "mocks:\n  \"GET /a\":\n    data: {}\n    sequence: [{status: 200}]\n", mockfile.CodeConflict, "GET /a", 3},
		{"SequenceStepInvalid", "m.yaml", "mocks:\n  \"GET /a\":\n    sequence:\n      - status: 999\n", mockfile.CodeStatus, "GET /a", 4},
		{"ConfigUnknown", "m.yaml", "config:\n  delayy: 10\n", mockfile.CodeUnknownKey, "", 2},
		{"ConfigBadBool", "m.yaml", "config:\n  fallbackToNetwork: maybe\n", mockfile.CodeType, "", 2},
		{"ConfigBadStorage", "m.yaml", "config:\n  persistence: {storage: floppy}\n", mockfile.CodeConfig, "", 2},
		{"ConfigBadLevel", "m.yaml", "config:\n  logging: {level: loud}\n", mockfile.CodeConfig, "", 2},
		{"ConfigBadRegexp", "m.yaml", "config:\n  ignorePatterns: [\"/(/\"]\n", mockfile.CodeConfig, "", 2},
		{"ConfigBadPrefix", "m.yaml", "config:\n  routeMatching: {parameterPrefix: \"$\"}\n", mockfile.CodeConfig, "", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := mockfile.Parse([]byte(tc.content), tc.file)
			var le *mockfile.LoadError
			if !errors.As(err, &le) {
				t.Fatalf("err=%v, want a *mockfile.LoadError", err)
			}
			if tc.name == "DuplicateRoute" { // YAML itself refuses duplicate keys
				return
			}
			for _, p := range le.Problems {
				lineOK := p.Line == tc.wantLine || (tc.wantLine < 0 && p.Line > 0) // yaml.v3 syntax lines are approximate
				if p.Code == tc.wantCode && p.Route == tc.wantRoute && lineOK {
					return
				}
			}
			t.Fatalf("problems=%+v, want code %s route %q line %d", le.Problems, tc.wantCode, tc.wantRoute, tc.wantLine)
		})
	}
}

// Ensure every problem of a file is reported, not just the first.
func TestParse_AllProblems(t *testing.T) {
	t.Parallel()
	_, err := mockfile.Parse([]byte("mocks:\n  \"GET /a\": {status: 900}\n  \"BAD\": {}\n  \"GET /b\": {dta: 1}\n"), "m.yaml")
	var le *mockfile.LoadError
	if !errors.As(err, &le) {
		t.Fatalf("err=%v, want *mockfile.LoadError", err)
	}
	if got, want := len(le.Problems), 4; got != want { // BAD has no method and no path
		t.Fatalf("problems=%d (%v), want %d", got, le.Problems, want)
	}
	if !strings.Contains(le.Error(), "did you mean \"data\"") {
		t.Fatalf("error %q lacks the typo hint", le.Error())
	}
}

// Ensure warnings (shadowed routes) do not stop a load.
func TestParse_Warnings(t *testing.T) {
	t.Parallel()
	set, err := mockfile.Parse([]byte("mocks:\n  \"GET /a/:id\": {}\n  \"GET /a/:name\": {}\n"), "m.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(set.Warnings) != 1 || set.Warnings[0].Code != mock.VConflictingRoute || set.Warnings[0].Line == 0 {
		t.Fatalf("warnings=%+v, want one CONFLICTING_ROUTE with a line", set.Warnings)
	}
}

// Ensure the config section maps onto mock.Config under its camelCase names.
func TestParse_Config(t *testing.T) {
	t.Parallel()
	set, err := mockfile.Parse([]byte(`
config:
  enabled: false
  delay: "100-400"
  fallbackToNetwork: false
  baseURL: /api
  defaultHeaders: {X-A: b}
  ignorePatterns: ["/health*", "/^/internal/"]
  includePatterns: ["/api/*"]
  routeMatching: {caseSensitive: true, exactMatch: true, stripPrefix: /v1, normalizeURLs: false, parameterPrefix: ":", supportWildcards: false}
  persistence: {enabled: true, ttl: 1000, storage: memory, maxCacheSize: 5, autoCleanup: false, namespace: ns}
  logging: {enabled: true, level: debug, logRequests: true}
`), "m.yaml")
	if err != nil {
		t.Fatal(err)
	}
	c := set.Config
	if c.Enabled || c.FallbackToNetwork || !set.FallbackSet || c.BaseURL != "/api" || c.DefaultHeaders["X-A"] != "b" {
		t.Fatalf("config=%+v", c)
	}
	if c.Delay != mock.Between(100*time.Millisecond, 400*time.Millisecond) {
		t.Fatalf("delay=%+v", c.Delay)
	}
	if len(c.IgnorePatterns) != 2 || !c.IgnorePatterns[1].MatchString("/internal/x") || len(c.IncludePatterns) != 1 {
		t.Fatalf("patterns=%v %v", c.IgnorePatterns, c.IncludePatterns)
	}
	rm := c.RouteMatching
	if !rm.CaseSensitive || !rm.ExactMatch || rm.StripPrefix != "/v1" || rm.NormalizeURLs || rm.SupportWildcards {
		t.Fatalf("routeMatching=%+v", rm)
	}
	p := c.Persistence
	if !p.Enabled || p.TTL != time.Second || p.MaxCacheSize != 5 || p.AutoCleanup || p.Namespace != "ns" {
		t.Fatalf("persistence=%+v", p)
	}
	if !c.Logging.Enabled || c.Logging.Level != slog.LevelDebug || !c.Logging.LogRequests {
		t.Fatalf("logging=%+v", c.Logging)
	}
}

func TestParseDelay(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in      string
		want    mock.Delay
		wantErr bool
	}{
		{"200", mock.Fixed(200 * time.Millisecond), false},
		{"100-400", mock.Between(100*time.Millisecond, 400*time.Millisecond), false},
		{"250ms", mock.Fixed(250 * time.Millisecond), false},
		{"1s", mock.Fixed(time.Second), false},
		{"400-100", mock.Delay{}, true},
		{"soon", mock.Delay{}, true},
		{"-5", mock.Delay{}, true},
	} {
		got, err := mockfile.ParseDelay(tc.in)
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("mockfile.ParseDelay(%q)=%v, %v; want %v, err=%v", tc.in, got, err, tc.want, tc.wantErr)
		}
	}
}
