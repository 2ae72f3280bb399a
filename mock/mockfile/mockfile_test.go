package mockfile_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/acme/app/mock"
	"github.com/acme/app/mock/mockfile"
)

// client serves set in-process, with no network fallback.
func client(t *testing.T, set *mockfile.Set) *http.Client {
	t.Helper()
	cfg := set.InterceptorConfig()
	cfg.FallbackToNetwork = false
	ic := mock.New(cfg, mock.WithMocks(set.Definitions()))
	t.Cleanup(func() { ic.Close() })
	return ic.Client()
}

// exchange is one request to a served set and what to expect of its answer.
type exchange struct {
	method, path, body string
	header             http.Header
	status             int
	want               string            // the body, exactly
	wantHeader         map[string]string // a subset of the answer's headers
}

func (x exchange) check(t *testing.T, c *http.Client) {
	t.Helper()
	var body io.Reader
	if x.body != "" {
		body = strings.NewReader(x.body)
	}
	req, err := http.NewRequest(x.method, "http://api.test"+x.path, body)
	if err != nil {
		t.Fatal(err)
	}
	for k, vs := range x.header {
		req.Header[k] = vs
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", x.method, x.path, err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != x.status || string(got) != x.want {
		t.Errorf("%s %s = %d %s; want %d %s", x.method, x.path, resp.StatusCode, got, x.status, x.want)
	}
	for k, v := range x.wantHeader {
		if g := resp.Header.Get(k); g != v {
			t.Errorf("%s %s: header %s = %q, want %q", x.method, x.path, k, g, v)
		}
	}
}

// Ensure a file's routes answer as written: statuses, headers, JSON data in written key
// order, raw bodies, templates over the request, and route matching (parameters, wildcards,
// any method, static segments before parameters whatever the file order).
func TestParse_Serves(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, file string
		asJSON     bool
		exchanges  []exchange
	}{
		{name: "path parameter and status", file: `
mocks:
  "GET /users/:id": {data: {id: "{{.Params.id}}", kind: user}}
  "POST /users": {status: 201, headers: {Location: "/users/{{.Body.name}}"}, data: {created: true}}
`, exchanges: []exchange{
			{method: "GET", path: "/users/42", status: 200, want: `{"id":"42","kind":"user"}`,
				wantHeader: map[string]string{"Content-Type": "application/json"}},
			{method: "POST", path: "/users", body: `{"name":"ada"}`, status: 201, want: `{"created":true}`,
				wantHeader: map[string]string{"Location": "/users/ada"}},
		}},
		{name: "data keeps the written key order", file: `
mocks:
  "GET /order": {data: {zeta: 1, alpha: [true, null], mid: {b: 2, a: 1}}}
`, exchanges: []exchange{
			{method: "GET", path: "/order", status: 200, want: `{"zeta":1,"alpha":[true,null],"mid":{"b":2,"a":1}}`},
		}},
		{name: "query, headers and body in templates", file: `
mocks:
  "GET /search": {data: {q: "{{.Query.q}}", page: "{{.Query.page | default \"1\"}}", tags: "{{len .QueryAll.tag}}", auth: "{{.Headers.authorization}}"}}
  "POST /echo": {body: '{"user": {{.Body.user}}, "n": {{.Body.n}}}', headers: {Content-Type: application/json}}
  "POST /form": {data: {email: "{{.Body.email}}"}}
`, exchanges: []exchange{
			{method: "GET", path: "/search?q=shoes&tag=a&tag=b", header: http.Header{"Authorization": {"Bearer t"}}, status: 200,
				want: `{"q":"shoes","page":"1","tags":"2","auth":"Bearer t"}`},
			{method: "GET", path: "/search?page=3", status: 200, want: `{"q":"","page":"3","tags":"0","auth":""}`},
			{method: "POST", path: "/echo", body: `{"user":{"name":"Ada"},"n":7}`, status: 200, want: `{"user": {"name":"Ada"}, "n": 7}`},
			{method: "POST", path: "/form", body: "email=ada%40example.com", header: http.Header{"Content-Type": {"application/x-www-form-urlencoded"}},
				status: 200, want: `{"email":"ada@example.com"}`},
		}},
		{name: "template functions", file: `
mocks:
  "POST /f/:id": {body: '{{upper .Params.id}} {{lower "AB"}} {{trim "  c  "}} {{json .Body.user}} {{len (seq 3)}} {{pick "only"}} {{int 5 5}} {{string 3 "z"}} {{len uuid}} {{default "d" .Query.none}} [{{.Params.nope}}] {{.Method}} {{.Path}} {{.Route}}'}
`, exchanges: []exchange{
			{method: "POST", path: "/f/ab", body: `{"user":{"n":1}}`, status: 200,
				want: `AB ab c {"n":1} 3 only 5 zzz 36 d [] POST /f/ab POST /f/:id`},
		}},
		{name: "raw body, content type and templating off", file: `
mocks:
  "GET /report.csv": {headers: {Content-Type: text/csv}, body: "id\n{{.Query.id}}\n"}
  "GET /literal": {templating: false, data: {t: "{{.Params.id}}"}}
  "GET /empty": {status: 204}
`, exchanges: []exchange{
			{method: "GET", path: "/report.csv?id=7", status: 200, want: "id\n7\n", wantHeader: map[string]string{"Content-Type": "text/csv"}},
			{method: "GET", path: "/literal", status: 200, want: `{"t":"{{.Params.id}}"}`},
			{method: "GET", path: "/empty", status: 204, want: ""},
		}},
		{name: "static beats parameter beats wildcard", file: `
mocks:
  "GET /files/*": {data: {rest: "{{index .Params \"*\"}}"}}
  "GET /files/:name": {data: {name: "{{.Params.name}}"}}
  "GET /files/readme": {data: {static: true}}
  "* /health": {data: {method: "{{.Method}}"}}
`, exchanges: []exchange{
			{method: "GET", path: "/files/readme", status: 200, want: `{"static":true}`},
			{method: "GET", path: "/files/a.txt", status: 200, want: `{"name":"a.txt"}`},
			{method: "GET", path: "/files/a/b/c.txt", status: 200, want: `{"rest":"a/b/c.txt"}`},
			{method: "DELETE", path: "/health", status: 200, want: `{"method":"DELETE"}`},
		}},
		{name: "config default headers", file: `
config:
  defaultHeaders: {X-Powered-By: app-mock}
mocks:
  "GET /a": {data: 1, headers: {X-Route: a}}
`, exchanges: []exchange{
			{method: "GET", path: "/a", status: 200, want: `1`,
				wantHeader: map[string]string{"X-Powered-By": "app-mock", "X-Route": "a", "Content-Type": "application/json"}},
		}},
		{name: "JSON file", asJSON: true, file: `{"mocks": {"GET /users/:id": {"status": 202, "data": {"id": "{{.Params.id}}"}}}}`,
			exchanges: []exchange{{method: "GET", path: "/users/7", status: 202, want: `{"id":"7"}`}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			name := "mocks.yaml"
			if tc.asJSON {
				name = "mocks.json"
			}
			set, err := mockfile.Parse([]byte(tc.file), name)
			if err != nil {
				t.Fatal(err)
			}
			c := client(t, set)
			for _, x := range tc.exchanges {
				x.check(t, c)
			}
		})
	}
}

// Ensure a request no route matches fails with ROUTE_MATCH_FAILED naming the closest routes,
// nearest first.
func TestParse_UnmatchedNamesClosestRoutes(t *testing.T) {
	t.Parallel()
	set, err := mockfile.Parse([]byte("mocks:\n  \"GET /orders\": {data: []}\n  \"GET /users\": {data: []}\n"), "mocks.yaml")
	if err != nil {
		t.Fatal(err)
	}
	_, err = client(t, set).Get("http://api.test/user")
	var me *mock.Error
	if !errors.As(err, &me) || me.Code != mock.CodeRouteMatchFailed || !slices.Equal(me.Closest, []string{"GET /users", "GET /orders"}) {
		t.Fatalf("GET /user: %v; want ROUTE_MATCH_FAILED with GET /users first", err)
	}
}

// Ensure a sequence answers its steps in turn, repeats the last, and starts again on
// ResetSequences; a delay beside it applies to its steps.
func TestParse_Sequence(t *testing.T) {
	t.Parallel()
	set, err := mockfile.Parse([]byte(`
mocks:
  "POST /checkout":
    delay: 1
    sequence:
      - {status: 500, data: {error: down}}
      - {status: 200, data: {ok: true}}
`), "mocks.yaml")
	if err != nil {
		t.Fatal(err)
	}
	c := client(t, set)
	down := exchange{method: "POST", path: "/checkout", status: 500, want: `{"error":"down"}`}
	ok := exchange{method: "POST", path: "/checkout", status: 200, want: `{"ok":true}`}
	for _, x := range []exchange{down, ok, ok} {
		x.check(t, c)
	}
	set.ResetSequences()
	down.check(t, c)
}

// Ensure generate answers generated records: an array of count records, or one record
// without count; the same file answers the same data, and another seed other data.
func TestParse_Generate(t *testing.T) {
	t.Parallel()
	const file = `
mocks:
  "GET /people": {generate: {kind: user, count: 3}}
  "GET /person": {generate: {kind: user}}
  "GET /others": {generate: {kind: user, count: 3, seed: 7}}
  "GET /ids": {generate: {kind: uuid, count: 2}}
`
	get := func(c *http.Client, path string) []byte {
		t.Helper()
		resp, err := c.Get("http://api.test" + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return b
	}
	load := func() *http.Client {
		set, err := mockfile.Parse([]byte(file), "mocks.yaml")
		if err != nil {
			t.Fatal(err)
		}
		return client(t, set)
	}
	a, b := load(), load()
	var people []mock.User
	if err := json.Unmarshal(get(a, "/people"), &people); err != nil || len(people) != 3 || people[0].Email == "" {
		t.Fatalf("people = %+v, %v; want 3 users", people, err)
	}
	var person mock.User
	if err := json.Unmarshal(get(a, "/person"), &person); err != nil || person.Name == "" {
		t.Fatalf("person = %+v, %v; want one user", person, err)
	}
	if x, y := get(a, "/people"), get(b, "/people"); string(x) != string(y) {
		t.Errorf("two loads of one file answer other data:\n%s\n%s", x, y)
	}
	if x, y := get(a, "/people"), get(a, "/others"); string(x) == string(y) {
		t.Error("another seed answers the same data")
	}
	var ids []string
	if err := json.Unmarshal(get(a, "/ids"), &ids); err != nil || len(ids) != 2 || len(ids[0]) != 36 {
		t.Errorf("ids = %q, %v; want 2 UUIDs", ids, err)
	}
}

// Ensure every problem of a file is reported, in file order, each with its route, line and
// code: the file is refused as a whole.
func TestParse_Problems(t *testing.T) {
	t.Parallel()
	type problem struct {
		line  int
		route string
		code  string
		text  string // a part of the message
	}
	for _, tc := range []struct {
		name, file string
		asJSON     bool
		want       []problem
	}{
		{"YAML syntax", "mocks: [\n", false, []problem{{1, "", mockfile.CodeSyntax, "did not find expected node content"}}},
		{"JSON syntax with its line", "{\"mocks\": {\n\"GET /a\": {\"status\": 200,}}}", true, []problem{{2, "", mockfile.CodeSyntax, "invalid character"}}},
		{"byte that is not UTF-8", "mocks:\n  \"GET /a\":\n    data: \"caf\xe9\"\n", false, []problem{{3, "", mockfile.CodeSyntax, "byte 0xE9 is not UTF-8"}}},
		{"byte that is not UTF-8 in JSON", "{\"mocks\": {\n\"GET /a\": {\"data\": \"caf\xe9\"}}}", true, []problem{{2, "", mockfile.CodeSyntax, "byte 0xE9 is not UTF-8"}}},
		{"control character", "mocks:\n  \"GET /a\":\n\n    data: \"x\x01y\"\n", false, []problem{{4, "", mockfile.CodeSyntax, "control characters are not allowed: byte 0x01"}}},
		{"unknown top-level key", "mockz: {}\n", false, []problem{{1, "", mockfile.CodeUnknownKey, `"mockz" in the file (did you mean "mocks"?)`}}},
		{"typo in a spec", "mocks:\n  \"GET /a\": {stauts: 200}\n", false, []problem{{2, "GET /a", mockfile.CodeUnknownKey, `(did you mean "status"?)`}}},
		{"spec not a mapping", "mocks:\n  \"GET /a\": 7\n", false, []problem{{2, "GET /a", mockfile.CodeType, "must be a mapping"}}},
		{"status not a number", "mocks:\n  \"GET /a\": {status: ok}\n", false, []problem{{2, "GET /a", mockfile.CodeType, "status must be an integer"}}},
		{"status out of range", "mocks:\n  \"GET /a\": {status: 900}\n", false, []problem{{2, "GET /a", mockfile.CodeStatus, "900"}}},
		{"bad delay", "mocks:\n  \"GET /a\": {delay: soon}\n", false, []problem{{2, "GET /a", mockfile.CodeDelay, `"soon"`}}},
		{"delay range upside down", "mocks:\n  \"GET /a\": {delay: [400, 100]}\n", false, []problem{{2, "GET /a", mockfile.CodeDelay, "delay"}}},
		{"bad config delay", "config:\n  delay: x\nmocks: {}\n", false, []problem{{2, "", mockfile.CodeDelay, `"x"`}}},
		{"template that does not parse", "mocks:\n  \"GET /a\": {data: {a: \"{{.Params.id\"}}\n", false, []problem{{2, "GET /a", mockfile.CodeTemplate, "unclosed action"}}},
		{"unknown template function", "mocks:\n  \"GET /a\": {body: \"{{nope}}\"}\n", false, []problem{{2, "GET /a", mockfile.CodeTemplate, `function "nope" not defined`}}},
		{"template count over its bound", "mocks:\n  \"GET /a\": {body: \"{{len (seq 2000000000)}}\"}\n", false, []problem{{2, "GET /a", mockfile.CodeTemplate, "the count must be 0-10000"}}},
		// Loops that write nothing would never meet the render's time bound, which is checked
		// as it writes: nested ranges over a variable count at the bound, and a defined
		// template (whose ranges run out of the check's sight) cannot be called.
		{"nested ranges over a variable", "mocks:\n  \"GET /a\": {body: \"{{$s := seq 10000}}{{range $s}}{{range $s}}{{end}}{{end}}\"}\n", false, []problem{{2, "GET /a", mockfile.CodeTemplate, "nested counted ranges would run up to 100000000 iterations"}}},
		{"defined template called", "mocks:\n  \"GET /a\": {body: \"{{define \\\"x\\\"}}{{range seq 1000}}{{end}}{{end}}{{template \\\"x\\\"}}\"}\n", false, []problem{{2, "GET /a", mockfile.CodeTemplate, "calling a defined template is not supported"}}},
		{"unknown generate kind", "mocks:\n  \"GET /a\": {generate: {kind: dragon}}\n", false, []problem{{2, "GET /a", mockfile.CodeGenerate, `"dragon"`}}},
		{"generate count over its bound", "mocks:\n  \"GET /a\": {generate: {kind: user, count: 10001}}\n", false, []problem{{2, "GET /a", mockfile.CodeGenerate, "between 0 and 10000"}}},
		{"empty sequence", "mocks:\n  \"GET /a\": {sequence: []}\n", false, []problem{{2, "GET /a", mockfile.CodeSequence, "non-empty"}}},
		{"nested sequence", "mocks:\n  \"GET /a\": {sequence: [{sequence: [{status: 200}]}]}\n", false, []problem{{2, "GET /a", mockfile.CodeSequence, "cannot be nested"}}},
		{"data and body", "mocks:\n  \"GET /a\": {data: 1, body: x}\n", false, []problem{{2, "GET /a", mockfile.CodeConflict, "data and body"}}},
		{"status beside a sequence", "mocks:\n  \"GET /a\": {status: 201, sequence: [{status: 200}]}\n", false, []problem{{2, "GET /a", mockfile.CodeConflict, "put it in each step"}}},
		{"unknown storage", "config:\n  persistence: {storage: floppy}\nmocks: {}\n", false, []problem{{2, "", mockfile.CodeConfig, "config.persistence.storage"}}},
		{"header name with a space", "mocks:\n  \"GET /a\":\n    headers:\n      Content Type: text/plain\n", false, []problem{{4, "GET /a", mockfile.CodeHeader, `header name "Content Type" is not a valid HTTP header name`}}},
		{"empty header name", "mocks:\n  \"GET /a\": {headers: {\"\": x}}\n", false, []problem{{2, "GET /a", mockfile.CodeHeader, `header name "" is not a valid`}}},
		{"header value with a line break", "mocks:\n  \"GET /a\":\n    headers:\n      X-A: |\n        two\n        lines\n", false, []problem{{4, "GET /a", mockfile.CodeHeader, `header X-A: the value holds a line break or NUL`}}},
		{"default header name", "config:\n  defaultHeaders: {\"X:Y\": z}\nmocks: {}\n", false, []problem{{2, "", mockfile.CodeHeader, `config.defaultHeaders header name "X:Y" is not a valid HTTP header name`}}},
		{"rate limit of zero", "config:\n  middleware:\n    - rateLimit: {limit: 0, window: 1s}\nmocks: {}\n", false, []problem{{3, "", mockfile.CodeConfig, "config.middleware[0].rateLimit.limit must be at least 1"}}},
		{"negative rate limit", "config:\n  middleware:\n    - delay: 1\n    - rateLimit:\n        limit: -5\nmocks: {}\n", false, []problem{{5, "", mockfile.CodeConfig, "config.middleware[1].rateLimit.limit must be at least 1"}}},
		{"unknown log level", "config:\n  logging: {level: loud}\nmocks: {}\n", false, []problem{{2, "", mockfile.CodeConfig, "config.logging.level"}}},
		{"unknown method", "mocks:\n  \"FETCH /a\": {}\n", false, []problem{{2, "FETCH /a", mock.VInvalidMethod, `"FETCH"`}}},
		{"empty path", "mocks:\n  \"GET\": {}\n", false, []problem{{2, "GET", mock.VEmptyPath, "empty path"}}},
		{"path without a slash", "mocks:\n  \"GET a//b\": {}\n", false, []problem{{2, "GET a//b", mock.VMalformedPath, "must start with /"}}},
		{"parameter twice", "mocks:\n  \"GET /a/:id/:id\": {}\n", false, []problem{{2, "GET /a/:id/:id", mock.VDuplicateParam, `"id" appears twice`}}},
		{"route defined twice", "mocks:\n  \"GET /a\": {}\n  \"GET /a\": {}\n", false, []problem{{3, "GET /a", mock.VShadowedRoute, "defined twice (first at line 2)"}}},
		{"every problem, in file order", "mocks:\n  \"GET /a\": {status: 900}\n  \"GET /b\": {dta: 1}\n  \"GET /c\": {data: 1}\n  \"GET /d\": {delay: soon}\n", false, []problem{
			{2, "GET /a", mockfile.CodeStatus, "900"},
			{3, "GET /b", mockfile.CodeUnknownKey, `"dta"`},
			{5, "GET /d", mockfile.CodeDelay, `"soon"`},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			name := "mocks.yaml"
			if tc.asJSON {
				name = "mocks.json"
			}
			set, err := mockfile.Parse([]byte(tc.file), name)
			var le *mockfile.LoadError
			if !errors.As(err, &le) || set != nil {
				t.Fatalf("Parse = %v, %v; want a *LoadError and no set", set, err)
			}
			if le.File != name || len(le.Problems) != len(tc.want) {
				t.Fatalf("problems of %s = %v; want %d", le.File, le.Problems, len(tc.want))
			}
			for i, w := range tc.want {
				p := le.Problems[i]
				if p.Line != w.line || p.Route != w.route || p.Code != w.code || !strings.Contains(p.Message, w.text) || p.Severity != mock.SeverityError {
					t.Errorf("problem %d = %+v; want line %d, route %q, code %s, a message with %q", i, p, w.line, w.route, w.code, w.text)
				}
			}
		})
	}
}

// Ensure routes that match the same URLs under other parameter names load, with a warning.
func TestParse_Warnings(t *testing.T) {
	t.Parallel()
	set, err := mockfile.Parse([]byte("mocks:\n  \"GET /a/:x\": {}\n  \"GET /a/:y\": {}\n"), "mocks.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(set.Routes) != 2 || len(set.Warnings) != 1 {
		t.Fatalf("routes %d, warnings %v; want 2 routes and 1 warning", len(set.Routes), set.Warnings)
	}
	w := set.Warnings[0]
	if w.Code != mock.VConflictingRoute || w.Route != "GET /a/:y" || w.Line != 3 || w.Severity != mock.SeverityWarning {
		t.Errorf("warning %+v", w)
	}
}

// Ensure a problem and a load error print as app mock validate shows them.
func TestLoadError_Text(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err  *mockfile.LoadError
		want string
	}{
		{&mockfile.LoadError{File: "m.yaml", Problems: []mockfile.Problem{{Route: "GET /a", Line: 2, Code: mockfile.CodeStatus, Message: "status 900 is not an HTTP status"}}},
			"m.yaml: 1 problem(s): line 2: GET /a: status 900 is not an HTTP status [INVALID_STATUS]"},
		{&mockfile.LoadError{Problems: []mockfile.Problem{{Code: mockfile.CodeSyntax, Message: "bad"}, {Line: 4, Code: mockfile.CodeConfig, Message: "worse"}}},
			"mocks: 2 problem(s): bad [SYNTAX_ERROR]; line 4: worse [INVALID_CONFIG]"},
	} {
		if got := tc.err.Error(); got != tc.want {
			t.Errorf("Error() = %q, want %q", got, tc.want)
		}
	}
}

// Ensure ParseDelay reads milliseconds, ranges and Go durations, and refuses anything else.
func TestParseDelay(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in       string
		min, max time.Duration
		err      string
	}{
		{in: "200", min: 200 * time.Millisecond, max: 200 * time.Millisecond},
		{in: " 200 ", min: 200 * time.Millisecond, max: 200 * time.Millisecond},
		{in: "0", min: 0, max: 0},
		{in: "100-400", min: 100 * time.Millisecond, max: 400 * time.Millisecond},
		{in: "250ms", min: 250 * time.Millisecond, max: 250 * time.Millisecond},
		{in: "1s", min: time.Second, max: time.Second},
		{in: "400-100", err: "the maximum is below the minimum"},
		{in: "", err: "want milliseconds"},
		{in: "soon", err: "want milliseconds"},
		{in: "-5", err: "want milliseconds"},
		{in: "1.5", err: "want milliseconds"},
	} {
		d, err := mockfile.ParseDelay(tc.in)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("ParseDelay(%q) = %+v, %v; want an error with %q", tc.in, d, err, tc.err)
		case tc.err == "" && (err != nil || d.Min != tc.min || d.Max != tc.max):
			t.Errorf("ParseDelay(%q) = %+v, %v; want %v-%v", tc.in, d, err, tc.min, tc.max)
		}
	}
}

// Ensure the config section sets the interceptor's configuration over its defaults, and
// LoadFile finds a relative wiremock directory beside the file.
func TestLoadFile_Config(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "mocks.yaml")
	if err := os.WriteFile(path, []byte(`
config:
  delay: 100-300
  fallbackToNetwork: false
  baseURL: /api
  routeMatching: {caseSensitive: true}
  persistence: {enabled: true, ttl: 2s, maxCacheSize: 7, dir: .cache}
  cors: {origins: ["http://localhost:5173"]}
  middleware:
    - auth: {tokens: [secret]}
wiremock: stubs
mocks:
  "GET /a": {data: 1}
  "GET /b": {data: "{{uuid}}"}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	set, err := mockfile.LoadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	c := set.Config
	if c.Delay != (mock.Delay{Min: 100 * time.Millisecond, Max: 300 * time.Millisecond}) || c.FallbackToNetwork || !set.FallbackSet ||
		c.BaseURL != "/api" || !c.RouteMatching.CaseSensitive || !c.Persistence.Enabled || c.Persistence.TTL != 2*time.Second ||
		c.Persistence.MaxCacheSize != 7 || !c.Enabled {
		t.Errorf("config = %+v", c)
	}
	if !slices.Equal(set.CORSOrigins, []string{"http://localhost:5173"}) || len(c.Middleware) != 1 || len(set.MiddlewareSpec) != 1 {
		t.Errorf("cors %v, middleware %d, spec %v", set.CORSOrigins, len(c.Middleware), set.MiddlewareSpec)
	}
	if set.WireMock != filepath.Join(dir, "stubs") || c.Persistence.Dir != filepath.Join(dir, ".cache") {
		t.Errorf("wiremock = %q, persistence.dir = %q: want them beside the file", set.WireMock, c.Persistence.Dir)
	}
	// The cache stays beside the file: a file from elsewhere cannot make the server write into
	// any directory.
	for _, d := range []string{"/tmp/elsewhere", "../up", "a/../../up", dir + "/../up"} {
		_, err := mockfile.Parse([]byte("config:\n  persistence: {dir: "+d+"}\nmocks: {}\n"), path)
		if err == nil || !strings.Contains(err.Error(), "config.persistence.dir must be a directory inside the mock file's directory") {
			t.Errorf("dir %s: err = %v, want it refused", d, err)
		}
	}
	if set, err := mockfile.Parse([]byte("config:\n  persistence: {dir: "+filepath.Join(dir, "store")+"}\nmocks: {}\n"), path); err != nil ||
		set.Config.Persistence.Dir != filepath.Join(dir, "store") {
		t.Errorf("an absolute directory inside the file's: %v", err)
	}
	// A fixed answer may be cached; one that calls a generator may not.
	routes := set.InterceptorConfig().Cache.Routes
	if routes["GET /a"].Off || !routes["GET /b"].Off || routes["GET /a"].Digest == "" {
		t.Errorf("cache routes = %+v", routes)
	}
	defs, cfg, err := mockfile.Load(path)
	if err != nil || len(defs) != 2 || cfg.BaseURL != "/api" || len(cfg.Cache.Routes) != 2 {
		t.Errorf("Load = %d definitions, %+v, %v", len(defs), cfg, err)
	}
}

// Ensure ParseMocks reads the admin API's body (route key → spec, JSON or YAML) and refuses
// an empty or invalid one with its problems.
func TestParseMocks(t *testing.T) {
	t.Parallel()
	set, err := mockfile.ParseMocks([]byte(`{"GET /a": {"data": {"v": 1}}, "POST /b": {"status": 201}}`))
	if err != nil || len(set.Routes) != 2 || set.Routes[0].Key != "GET /a" || set.Routes[1].Key != "POST /b" {
		t.Fatalf("ParseMocks = %+v, %v", set, err)
	}
	exchange{method: "GET", path: "/a", status: 200, want: `{"v":1}`}.check(t, client(t, set))
	for _, body := range []string{``, `{"GET /a": {"status": "x"}}`, `{"GET /a": {"data": 1`} {
		var le *mockfile.LoadError
		if _, err := mockfile.ParseMocks([]byte(body)); !errors.As(err, &le) || len(le.Problems) == 0 {
			t.Errorf("ParseMocks(%q) = %v; want a *LoadError with problems", body, err)
		}
	}
}

// Ensure a small document of nested YAML aliases (ten levels of ten) is refused before it is
// expanded into a hundred million values, as a file and as an admin body, and that an alias
// inside its own anchor is refused too.
func TestParse_AliasBomb(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i <= 8; i++ {
		fmt.Fprintf(&b, "a%d: &a%d [*a%[3]d, *a%[3]d, *a%[3]d, *a%[3]d, *a%[3]d, *a%[3]d, *a%[3]d, *a%[3]d, *a%[3]d, *a%[3]d]\n", i, i, i-1)
	}
	bomb := "mocks:\n  \"GET /x\":\n    data:\n" + indent(b.String(), "      ")
	_, err := mockfile.Parse([]byte(bomb), "bomb.yaml")
	var le *mockfile.LoadError
	if !errors.As(err, &le) || !strings.Contains(le.Error(), "more than 4194304 values once its aliases are expanded") {
		t.Fatalf("err = %v, want the file refused for its expanded size", err)
	}
	if _, err := mockfile.ParseMocks([]byte("\"GET /x\":\n  data:\n" + indent(b.String(), "    "))); !errors.As(err, &le) {
		t.Fatalf("admin body: err = %v, want it refused", err)
	}
	if _, err := mockfile.Parse([]byte("mocks:\n  \"GET /x\":\n    data: &a [1, *a]\n"), "loop.yaml"); err == nil {
		t.Fatal("an alias inside its own anchor was accepted")
	}
}

func indent(s, prefix string) string {
	return prefix + strings.ReplaceAll(strings.TrimSuffix(s, "\n"), "\n", "\n"+prefix) + "\n"
}

// Ensure a route keeps its spec as JSON (what GET /__mock/mocks prints), not as decoded
// maps, with non-string YAML keys printed as strings and map keys sorted.
func TestRoute_SourceIsJSON(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, file string
		want       string
	}{
		{"Data", "mocks:\n  \"GET /a\": {status: 201, data: {b: 1, a: [x, \"<y>\"]}}\n", `{"data":{"a":["x","\u003cy\u003e"],"b":1},"status":201}`},
		{"IntKeys", "mocks:\n  \"GET /a\": {data: {200: ok}}\n", `{"data":{"200":"ok"}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			set, err := mockfile.Parse([]byte(tc.file), "m.yaml")
			if err != nil {
				t.Fatal(err)
			}
			src := set.Routes[0].Source
			raw, ok := src.(json.RawMessage)
			if !ok {
				t.Fatalf("Source is a %T, want json.RawMessage", src)
			}
			if got := string(raw); got != tc.want {
				t.Fatalf("Source=%s, want %s", got, tc.want)
			}
		})
	}
}
