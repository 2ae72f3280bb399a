package openapi_test

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/acme/app/mock"
	"github.com/acme/app/mock/openapi"
)

// serve starts a real HTTP server answering from the description at path.
func serve(t *testing.T, path string, opts openapi.Options) *httptest.Server {
	t.Helper()
	spec, err := openapi.Load(path)
	if err != nil {
		t.Fatalf("Load(%s): %v", path, err)
	}
	cfg := mock.DefaultConfig()
	cfg.FallbackToNetwork = true
	ic := mock.New(cfg, mock.WithMocks(spec.Definitions(opts)), mock.WithFallback(openapi.NotFound()))
	srv := httptest.NewServer(ic)
	t.Cleanup(srv.Close)
	return srv
}

type answer struct {
	status int
	header http.Header
	body   []byte
}

func (a answer) json(t *testing.T) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(a.body, &v); err != nil {
		t.Fatalf("body %q is not JSON: %v", a.body, err)
	}
	return v
}

func do(t *testing.T, srv *httptest.Server, method, path string, header map[string]string, body string) answer {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, srv.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return answer{status: resp.StatusCode, header: resp.Header, body: b}
}

func TestServeAnswers(t *testing.T) {
	t.Parallel()
	srv := serve(t, "testdata/petstore.yaml", openapi.Options{})
	tests := []struct {
		name       string
		method     string
		path       string
		header     map[string]string
		body       string
		wantStatus int
		wantType   string
		wantBody   any    // compared as JSON when set
		wantText   string // compared as text when set (or when the status is 204)
		wantHeader map[string]string
	}{
		{name: "list built from the schema and a sibling file", method: "GET", path: "/pets", wantStatus: 200, wantType: "application/json",
			wantBody:   []any{map[string]any{"id": 1.0, "name": "Tom", "nickname": "string", "owner": map[string]any{"city": "Oslo", "email": "user@example.com"}}},
			wantHeader: map[string]string{"X-Total": "2"}},
		{name: "text media type by Accept", method: "GET", path: "/pets", header: map[string]string{"Accept": "text/csv"}, wantStatus: 200, wantType: "text/csv", wantText: "id,name\n1,Tom"},
		{name: "no media type fits", method: "GET", path: "/pets", header: map[string]string{"Accept": "application/xml"}, wantStatus: 406, wantType: openapi.ProblemType},
		{name: "first named example", method: "GET", path: "/pets/3", wantStatus: 200, wantBody: map[string]any{"id": 1.0, "name": "Tom"}},
		{name: "example by name through a reference", method: "GET", path: "/pets/3", header: map[string]string{"Prefer": "example=rex"}, wantStatus: 200, wantBody: map[string]any{"id": 2.0, "name": "Rex"}},
		{name: "unknown example", method: "GET", path: "/pets/3", header: map[string]string{"Prefer": "example=zed"}, wantStatus: 404, wantType: openapi.ProblemType},
		{name: "preferred code", method: "GET", path: "/pets/3", header: map[string]string{"Prefer": "code=404"}, wantStatus: 404, wantBody: map[string]any{"error": "no such pet"}},
		{name: "path parameter under its minimum", method: "GET", path: "/pets/0", wantStatus: 422, wantType: openapi.ProblemType},
		{name: "query parameter over its maximum", method: "GET", path: "/pets?limit=99", wantStatus: 422, wantType: openapi.ProblemType},
		{name: "comma-separated array parameter", method: "GET", path: "/pets?tags=small,large", wantStatus: 200},
		{name: "array item outside its enum", method: "GET", path: "/pets?tags=small,huge", wantStatus: 422},
		{name: "global apiKey missing: the operation's own 401", method: "POST", path: "/pets", body: `{"name":"Rex"}`, header: map[string]string{"Content-Type": "application/json"}, wantStatus: 401, wantBody: map[string]any{"error": "sign in"}},
		{name: "readOnly id may be left out, writeOnly not answered", method: "POST", path: "/pets", body: `{"name":"Rex","secret":"s"}`, header: map[string]string{"Content-Type": "application/json", "X-API-Key": "k"}, wantStatus: 201,
			wantBody: map[string]any{"id": 1.0, "name": "Tom", "nickname": "string", "owner": map[string]any{"city": "Oslo", "email": "user@example.com"}}},
		{name: "nullable accepts null", method: "POST", path: "/pets", body: `{"name":"Rex","nickname":null}`, header: map[string]string{"Content-Type": "application/json", "X-API-Key": "k"}, wantStatus: 201},
		{name: "format checked in a sibling file's schema", method: "POST", path: "/pets", body: `{"name":"Rex","owner":{"email":"nope"}}`, header: map[string]string{"Content-Type": "application/json", "X-API-Key": "k"}, wantStatus: 422},
		{name: "body of another media type", method: "POST", path: "/pets", body: `name=Rex`, header: map[string]string{"Content-Type": "text/plain", "X-API-Key": "k"}, wantStatus: 415, wantType: openapi.ProblemType},
		{name: "bearer missing", method: "DELETE", path: "/pets/3", wantStatus: 401, wantType: openapi.ProblemType, wantHeader: map[string]string{"WWW-Authenticate": "Bearer"}},
		{name: "bearer given, no content", method: "DELETE", path: "/pets/3", header: map[string]string{"Authorization": "Bearer t"}, wantStatus: 204, wantText: ""},
		{name: "method the path lacks", method: "PATCH", path: "/pets/3", wantStatus: 405, wantType: openapi.ProblemType},
		{name: "path nobody defines", method: "GET", path: "/nope", wantStatus: 404, wantType: openapi.ProblemType},
		{name: "segment mixing text and a parameter", method: "GET", path: "/files/ab.json", wantStatus: 200, wantBody: map[string]any{"file": true}},
		{name: "its parameter validated", method: "GET", path: "/files/toolong.json", wantStatus: 422},
		{name: "header parameter checked", method: "GET", path: "/files/ab.json", header: map[string]string{"X-Version": "two"}, wantStatus: 422, wantType: openapi.ProblemType},
		{name: "header parameter read as its type", method: "GET", path: "/files/ab.json", header: map[string]string{"X-Version": "2"}, wantStatus: 200},
		{name: "its text checked", method: "GET", path: "/files/ab.xml", wantStatus: 404, wantType: openapi.ProblemType},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := do(t, srv, tt.method, tt.path, tt.header, tt.body)
			if got.status != tt.wantStatus {
				t.Fatalf("status %d, want %d; body %s", got.status, tt.wantStatus, got.body)
			}
			if tt.wantType != "" && got.header.Get("Content-Type") != tt.wantType {
				t.Errorf("Content-Type %q, want %q", got.header.Get("Content-Type"), tt.wantType)
			}
			if tt.wantBody != nil {
				if d := cmp.Diff(tt.wantBody, got.json(t)); d != "" {
					t.Errorf("body (-want +got):\n%s", d)
				}
			}
			if tt.wantText != "" || got.status == http.StatusNoContent {
				if string(got.body) != tt.wantText {
					t.Errorf("body %q, want %q", got.body, tt.wantText)
				}
			}
			for k, v := range tt.wantHeader {
				if got.header.Get(k) != v {
					t.Errorf("header %s %q, want %q", k, got.header.Get(k), v)
				}
			}
		})
	}
}

func TestLoadProblems(t *testing.T) {
	t.Parallel()
	tests := []struct {
		file     string
		wantLine int    // a problem at this line (0: any)
		wantText string // in that problem's message or pointer
	}{
		{"broken-ref.yaml", 14, "Missing"},
		{"ref-cycle.yaml", 0, "cycle"},
		{"bad-parts.yaml", 9, "required: true"},
		{"bad-parts.yaml", 14, "nobody"},
		{"bad-parts.yaml", 16, "2000"},
		{"bad-parts.yaml", 18, `path "/a b?c" must not hold spaces, a query or a fragment`},
		{"missing-file.yaml", 14, `testdata/missing-file.yaml:14: /paths/~1a/get/responses/200/content/application~1json/schema/$ref: $ref "./nowhere.yaml#/Thing": `},
		{"syntax.yaml", 0, "YAML"},
		{"swagger2.yaml", 1, "OpenAPI 3"},
		{"absent.yaml", 0, "no such file"},
		{"bad-schema.yaml", 11, "not a valid schema"},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			t.Parallel()
			_, err := openapi.Load(filepath.Join("testdata", tt.file))
			var le *openapi.LoadError
			if !errors.As(err, &le) {
				t.Fatalf("Load: %v, want a *LoadError", err)
			}
			for _, p := range le.Problems {
				if (tt.wantLine == 0 || p.Line == tt.wantLine) && strings.Contains(p.String(), tt.wantText) {
					return
				}
			}
			t.Errorf("no problem at line %d naming %q in %v", tt.wantLine, tt.wantText, le.Problems)
		})
	}
}

// Ensure a $ref to a file that cannot be used is reported where each part of the problem
// is: a file that cannot be read at the $ref's own file, line and pointer; a file that does
// not parse at its own line, in that file.
func TestLoadProblems_RefToBadFile(t *testing.T) {
	t.Parallel()
	spec := "openapi: 3.1.0\ninfo: {title: t, version: \"1\"}\npaths:\n  /a:\n    get:\n      responses:\n        \"200\":\n          description: ok\n          content:\n            application/json:\n              schema:\n                $ref: \"./other.yaml#/Thing\"\n"
	for _, tc := range []struct {
		name  string
		other string // "" for no such file
		want  func(dir string) string
	}{
		{"Missing", "", func(dir string) string {
			return filepath.Join(dir, "spec.yaml") + `:12: /paths/~1a/get/responses/200/content/application~1json/schema/$ref: $ref "./other.yaml#/Thing": `
		}},
		{"NotYAML", "Thing:\n  type: object\n  a: b: c\n", func(dir string) string {
			return filepath.Join(dir, "other.yaml") + `:3: not well-formed YAML or JSON`
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "spec.yaml"), []byte(spec), 0o644); err != nil {
				t.Fatal(err)
			}
			if tc.other != "" {
				if err := os.WriteFile(filepath.Join(dir, "other.yaml"), []byte(tc.other), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			_, err := openapi.Load(filepath.Join(dir, "spec.yaml"))
			var le *openapi.LoadError
			if !errors.As(err, &le) || len(le.Problems) == 0 {
				t.Fatalf("Load: %v, want a *LoadError", err)
			}
			if got, want := le.Problems[0].String(), tc.want(dir); !strings.HasPrefix(got, want) {
				t.Errorf("problem\n got %s\nwant %s…", got, want)
			}
		})
	}
}

func TestRecursiveSchemaAnswersFinitely(t *testing.T) {
	t.Parallel()
	for _, dynamic := range []bool{false, true} {
		srv := serve(t, "testdata/petstore.yaml", openapi.Options{Dynamic: dynamic, Seed: 1})
		got := do(t, srv, "GET", "/tree", nil, "")
		if got.status != 200 || len(got.body) > 1<<20 {
			t.Fatalf("dynamic=%v: status %d, %d bytes", dynamic, got.status, len(got.body))
		}
		depth, v := 0, got.json(t)
		for {
			m, ok := v.(map[string]any)
			if !ok {
				break
			}
			kids, _ := m["children"].([]any)
			if len(kids) == 0 {
				break
			}
			depth, v = depth+1, kids[0]
		}
		if depth == 0 || depth > 20 {
			t.Errorf("dynamic=%v: the tree nests %d levels, want between 1 and 20", dynamic, depth)
		}
	}
}

func TestSeedMakesDynamicAnswersRepeat(t *testing.T) {
	t.Parallel()
	first := func(seed uint64) []string {
		srv := serve(t, "testdata/petstore.yaml", openapi.Options{Dynamic: true, Seed: seed})
		var out []string
		for range 3 {
			out = append(out, string(do(t, srv, "GET", "/pets", nil, "").body))
		}
		return out
	}
	a, b, c := first(7), first(7), first(8)
	if d := cmp.Diff(a, b); d != "" {
		t.Errorf("seed 7 twice answered differently:\n%s", d)
	}
	if cmp.Equal(a, c) {
		t.Errorf("seeds 7 and 8 answered alike: %v", a)
	}
	if a[0] == a[1] && a[1] == a[2] {
		t.Errorf("three dynamic answers were the same: %s", a[0])
	}
}

func TestViolationsAreLocated(t *testing.T) {
	t.Parallel()
	srv := serve(t, "testdata/petstore.yaml", openapi.Options{})
	tests := []struct {
		name, method, path, body string
		want                     []openapi.Violation // location and code compared
	}{
		{"wrong type and missing property", "POST", "/pets", `{"name": 5, "owner": {"email": "x"}}`, []openapi.Violation{
			{Location: []string{"body", "name"}, Code: "type"},
			{Location: []string{"body", "owner", "email"}, Code: "format"},
		}},
		{"missing required property", "POST", "/pets", `{"nickname": "x"}`, []openapi.Violation{{Location: []string{"body"}, Code: "required"}}},
		{"missing body", "POST", "/pets", ``, []openapi.Violation{{Location: []string{"body"}, Code: "required"}}},
		{"not JSON", "POST", "/pets", `{"name":`, []openapi.Violation{{Location: []string{"body"}, Code: "type"}}},
		{"query over maximum", "GET", "/pets?limit=51", ``, []openapi.Violation{{Location: []string{"query", "limit"}, Code: "maximum"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			// the 401 answer comes first without a key
			got := do(t, srv, tt.method, tt.path, map[string]string{"Content-Type": "application/json", "X-API-Key": "k"}, tt.body)
			if got.status != 422 {
				t.Fatalf("status %d, want 422: %s", got.status, got.body)
			}
			var p struct {
				Status     int                 `json:"status"`
				Type       string              `json:"type"`
				Validation []openapi.Violation `json:"validation"`
			}
			if err := json.Unmarshal(got.body, &p); err != nil {
				t.Fatal(err)
			}
			if p.Status != 422 || !strings.HasSuffix(p.Type, openapi.TypeUnprocessable) {
				t.Errorf("problem status %d type %q", p.Status, p.Type)
			}
			var gotLC []openapi.Violation
			for _, v := range p.Validation {
				if v.Severity != "Error" || v.Message == "" {
					t.Errorf("violation %+v: want severity Error and a message", v)
				}
				gotLC = append(gotLC, openapi.Violation{Location: v.Location, Code: v.Code})
			}
			if d := cmp.Diff(tt.want, gotLC); d != "" {
				t.Errorf("violations (-want +got):\n%s", d)
			}
		})
	}
}

func TestRoutesNameOperations(t *testing.T) {
	t.Parallel()
	spec, err := openapi.Load("testdata/petstore.yaml")
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]string{}
	for _, r := range spec.Routes(openapi.Options{}) {
		keys[r.Key] = r.OperationID
	}
	for key, id := range map[string]string{"GET /pets": "listPets", "POST /pets": "createPet", "GET /pets/:petId": "", "* /pets/:petId": ""} {
		got, ok := keys[key]
		if !ok || got != id {
			t.Errorf("route %q: operationId %q (present %v), want %q; routes %v", key, got, ok, id, keys)
		}
	}
	if spec.Version != "3.0.3" || spec.Operations() != 7 {
		t.Errorf("version %q, %d operations; want 3.0.3 and 7", spec.Version, spec.Operations())
	}
}

func FuzzParsePrefer(f *testing.F) {
	for _, s := range []string{"code=404", "example=bob, dynamic=true", `code="200"; example="a b"`, "dynamic=false", "code=99999", ",,=", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p := openapi.ParsePrefer([]string{s})
		if p.Code != 0 && (p.Code < 100 || p.Code > 599) {
			t.Errorf("ParsePrefer(%q).Code = %d, outside 100-599", s, p.Code)
		}
	})
}

// FuzzLoad feeds arbitrary descriptions to Load: it must return a description or a
// *LoadError, never panic or hang, and a loaded one must answer its routes.
func FuzzLoad(f *testing.F) {
	for _, name := range []string{"petstore.yaml", "broken-ref.yaml", "ref-cycle.yaml", "bad-parts.yaml"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"openapi":"3.1.0","info":{"title":"t","version":"1"},"paths":{"/a":{"get":{"responses":{"200":{"description":"x","content":{"application/json":{"schema":{"$ref":"#/components/schemas/A"}}}}}}}},"components":{"schemas":{"A":{"type":["object","null"],"properties":{"a":{"$ref":"#/components/schemas/A"}}}}}}`))
	f.Add([]byte("a: &a [*a, *a]\nb: [*a, *a, *a]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "spec.yaml")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		spec, err := openapi.Load(path)
		if err != nil {
			var le *openapi.LoadError
			if !errors.As(err, &le) {
				t.Fatalf("Load: %v is not a *LoadError", err)
			}
			return
		}
		ic := mock.New(mock.DefaultConfig(), mock.WithMocks(spec.Definitions(openapi.Options{Dynamic: true, Seed: 1})), mock.WithTransport(noNetwork{}))
		client := ic.Client()
		for _, r := range spec.Routes(openapi.Options{}) {
			if r.Method == "*" {
				continue
			}
			req, _ := http.NewRequest(r.Method, "http://spec.test"+strings.ReplaceAll(strings.ReplaceAll(r.Path, "{", "x"), "}", ""), nil)
			if req == nil {
				continue
			}
			if resp, err := client.Do(req); err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}
	})
}

// Ensure a description built to explode (every property of an object refers to the object;
// an allOf of itself) loads, answers bounded bodies quickly, and validates 3.1 type lists,
// oneOf and additionalProperties.
func TestHostileAndThreeOneSchemas(t *testing.T) {
	t.Parallel()
	srv := serve(t, "testdata/hostile.json", openapi.Options{})
	start := time.Now()
	for _, path := range []string{"/wide", "/loop"} {
		got := do(t, srv, "GET", path, nil, "")
		if got.status != 200 || len(got.body) > 4<<20 {
			t.Errorf("GET %s: status %d, %d bytes", path, got.status, len(got.body))
		}
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("the bounded answers took %v", d)
	}
	tests := []struct {
		body       string
		wantStatus int
		wantCode   string // of the first violation
	}{
		{`{"label": null, "shape": {"r": 1}}`, 200, ""},
		{`{"label": "x", "shape": {"w": 1, "h": 2}, "tags": ["a"]}`, 200, ""},
		{`{"label": true, "shape": {"r": 1}}`, 422, "type"},
		{`{"label": "x", "shape": {"r": 0}}`, 422, "oneOf"},
		{`{"label": "x", "shape": {"r": 1}, "extra": 1}`, 422, "additionalProperties"},
		{`{"label": "x", "shape": {"r": 1}, "tags": ["a", "b", "c"]}`, 422, "maxItems"},
	}
	for _, tt := range tests {
		got := do(t, srv, "POST", "/things", map[string]string{"Content-Type": "application/json"}, tt.body)
		if got.status != tt.wantStatus {
			t.Errorf("POST %s: status %d, want %d: %s", tt.body, got.status, tt.wantStatus, got.body)
			continue
		}
		if tt.wantCode == "" {
			if d := cmp.Diff(map[string]any{"label": "first", "shape": map[string]any{"r": 1.0}, "tags": []any{"string"}}, got.json(t)); d != "" {
				t.Errorf("answer (-want +got):\n%s", d)
			}
			continue
		}
		var p struct {
			Validation []openapi.Violation `json:"validation"`
		}
		_ = json.Unmarshal(got.body, &p)
		if len(p.Validation) == 0 || p.Validation[0].Code != tt.wantCode {
			t.Errorf("POST %s: violations %+v, want the first with code %q", tt.body, p.Validation, tt.wantCode)
		}
	}
}

// FuzzAnswer sends arbitrary requests to a description: every answer is one the description
// defines or a problem, never a handler failure (a panic surfaces as 500).
func FuzzAnswer(f *testing.F) {
	spec, err := openapi.Load("testdata/petstore.yaml")
	if err != nil {
		f.Fatal(err)
	}
	cfg := mock.DefaultConfig()
	ic := mock.New(cfg, mock.WithMocks(spec.Definitions(openapi.Options{Seed: 3})), mock.WithTransport(noNetwork{}))
	client := ic.Client()
	f.Add("GET", "/pets?limit=3&tags=small,large", "", "application/json", "code=200", "")
	f.Add("POST", "/pets", `{"name":"Rex","owner":{"email":"a@b.co"}}`, "*/*;q=0.1, text/csv", "dynamic=true", "application/json")
	f.Add("GET", "/files/%7Bx%7D.json", "", "", "example=tom, code=404", "")
	f.Add("DELETE", "/pets/0", "[1,2", "text/*", "code=abc", "application/merge-patch+json; charset=utf-8")
	f.Fuzz(func(t *testing.T, method, path, body, accept, prefer, ctype string) {
		if !strings.HasPrefix(path, "/") {
			path = "/" + path
		}
		req, err := http.NewRequest(method, "http://spec.test"+path, strings.NewReader(body))
		if err != nil {
			return
		}
		req.Header.Set("Accept", accept)
		req.Header.Set("Prefer", prefer)
		req.Header.Set("Content-Type", ctype)
		req.Header.Set("X-API-Key", "k")
		resp, err := client.Do(req)
		if err != nil {
			return // unmatched requests go to the network, which the test has not
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode >= 500 {
			t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, b)
		}
	})
}

// noNetwork fails every request that would leave the process, at once.
type noNetwork struct{}

func (noNetwork) RoundTrip(*http.Request) (*http.Response, error) {
	return nil, errors.New("no network in this test")
}

// Ensure each kind of security scheme is asked for where its credentials travel, that one
// alternative of several suffices while every scheme of one alternative is needed, and that
// `security: []` opens an operation. A request without them is a 401 with the challenges of
// what it lacks.
func TestSecuritySchemes(t *testing.T) {
	t.Parallel()
	srv := serve(t, "testdata/security.yaml", openapi.Options{})
	for _, tt := range []struct {
		path      string
		header    map[string]string
		want      int
		challenge string
	}{
		{"/global", nil, 401, ""},
		{"/global?api_key=k", nil, 200, ""},
		{"/global?api_key=", nil, 200, ""}, // present: presence is what is checked, not the value
		{"/public", nil, 200, ""},
		{"/cookie", nil, 401, ""},
		{"/cookie", map[string]string{"Cookie": "other=1"}, 401, ""},
		{"/cookie", map[string]string{"Cookie": "a=1; session=s"}, 200, ""},
		{"/basic", nil, 401, `Basic realm="*"`},
		{"/basic", map[string]string{"Authorization": "Bearer t"}, 401, `Basic realm="*"`},
		{"/basic", map[string]string{"Authorization": "basic dTpw"}, 200, ""},
		{"/oauth", nil, 401, "Bearer"},
		{"/oauth", map[string]string{"Authorization": "Bearer t"}, 200, ""},
		{"/either", nil, 401, "Bearer"},
		{"/either", map[string]string{"X-Key": "k"}, 200, ""},
		{"/either", map[string]string{"Authorization": "Bearer t"}, 200, ""},
		{"/both", map[string]string{"X-Key": "k"}, 401, "Bearer"},
		{"/both", map[string]string{"Authorization": "Bearer t"}, 401, ""},
		{"/both", map[string]string{"X-Key": "k", "Authorization": "Bearer t"}, 200, ""},
	} {
		got := do(t, srv, "GET", tt.path, tt.header, "")
		if got.status != tt.want {
			t.Errorf("GET %s %v: status %d, want %d; body %s", tt.path, tt.header, got.status, tt.want, got.body)
			continue
		}
		if tt.want == 401 {
			if got.header.Get("Content-Type") != openapi.ProblemType {
				t.Errorf("GET %s %v: Content-Type %q, want problem+json", tt.path, tt.header, got.header.Get("Content-Type"))
			}
			if tt.challenge != "" && !strings.Contains(strings.Join(got.header.Values("WWW-Authenticate"), ", "), tt.challenge) {
				t.Errorf("GET %s %v: WWW-Authenticate %q, want %q", tt.path, tt.header, got.header.Values("WWW-Authenticate"), tt.challenge)
			}
		}
	}
}

// Ensure a response header HTTP cannot carry as written is not dropped or changed without a
// word: a name HTTP does not allow is left out, a value's line breaks are sent as spaces,
// and each comes with a warning at its line; the other headers are sent as written.
func TestResponseHeadersHTTPRefuses(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "h.yaml")
	desc := "openapi: 3.0.3\ninfo: {title: t, version: \"1\"}\npaths:\n  /a:\n    get:\n      responses:\n        \"200\":\n          description: ok\n          headers:\n" +
		"            X Total: {schema: {type: integer}, example: 5}\n" +
		"            X-Multi: {schema: {type: string}, example: \"a\\nb\"}\n" +
		"            X-Fine: {schema: {type: string}, example: fine}\n" +
		"          content:\n            application/json: {example: {ok: true}}\n"
	if err := os.WriteFile(path, []byte(desc), 0o644); err != nil {
		t.Fatal(err)
	}
	spec, err := openapi.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, w := range spec.Warnings() {
		got = append(got, w.String())
	}
	for i, want := range []string{
		path + `:10: /paths/~1a/get/responses/200/headers/X Total: "X Total" is not a valid HTTP header name`,
		path + `:11: /paths/~1a/get/responses/200/headers/X-Multi: the value holds a line break`,
	} {
		if i >= len(got) || !strings.HasPrefix(got[i], want) {
			t.Errorf("warnings:\n%s\nwant %d starting %s", strings.Join(got, "\n"), i, want)
		}
	}
	srv := serve(t, path, openapi.Options{})
	a := do(t, srv, "GET", "/a", nil, "")
	if a.status != 200 || a.header.Get("X-Multi") != "a b" || a.header.Get("X-Fine") != "fine" || len(a.header.Values("X Total")) != 0 {
		t.Errorf("GET /a: %d %v", a.status, a.header)
	}
}

// Ensure no description makes an answer pass MaxAnswer: a schema asking for 1 GB (100 items
// of 100 strings of 100,000 characters) loads without being built and its route answers a 500 problem,
// static or generated, while answers within the bound are served whole and valid, also past
// the answers the description keeps from load (built per request then).
func TestLargeAnswersAreBounded(t *testing.T) {
	t.Parallel()
	spec, err := openapi.Load("testdata/large.yaml") // builds no 1 GB answer: that would exhaust the test's memory
	if err != nil {
		t.Fatal(err)
	}
	warnings := spec.Warnings()
	if len(warnings) != 1 || !strings.Contains(warnings[0].String(), "/paths/~1big/get/responses/200/content/application~1json") ||
		!strings.Contains(warnings[0].Message, "10 MB") {
		t.Errorf("warnings = %v, want one for /big", warnings)
	}
	for _, dynamic := range []bool{false, true} {
		srv := serve(t, "testdata/large.yaml", openapi.Options{Dynamic: dynamic, Seed: 1})
		got := do(t, srv, "GET", "/big", nil, "")
		if got.status != http.StatusInternalServerError || got.header.Get("Content-Type") != openapi.ProblemType || len(got.body) > 4096 {
			t.Fatalf("dynamic=%v: GET /big = %d %s, %d bytes; want a 500 problem", dynamic, got.status, got.header.Get("Content-Type"), len(got.body))
		}
		p, _ := got.json(t).(map[string]any)
		if p["type"] != openapi.ProblemTypeBase+openapi.TypeAnswerTooLarge || !strings.Contains(p["detail"].(string), "10 MB") {
			t.Errorf("dynamic=%v: problem %v", dynamic, p)
		}
		small := do(t, srv, "GET", "/small", nil, "")
		var items []string
		if err := json.Unmarshal(small.body, &items); err != nil || small.status != 200 || len(items) < 3 || len(items[0]) < 1000 {
			t.Errorf("dynamic=%v: GET /small = %d, %d items (%v)", dynamic, small.status, len(items), err)
		}
	}
	srv := serve(t, "testdata/large.yaml", openapi.Options{})
	for i := range 8 {
		got := do(t, srv, "GET", "/nine/"+strconv.Itoa(i), nil, "")
		var items []string
		if err := json.Unmarshal(got.body, &items); err != nil || got.status != 200 || len(items) != 90 || len(items[89]) != 100000 {
			t.Fatalf("GET /nine/%d = %d, %d items (%v)", i, got.status, len(items), err)
		}
	}
}

// Ensure patterns are read as ECMA-262 (look-ahead, \p{Lu}), as JSON Schema says, and that a
// pattern that backtracks without end cannot hang a request: the value is let through.
func TestECMAPatterns(t *testing.T) {
	t.Parallel()
	srv := serve(t, "testdata/patterns.yaml", openapi.Options{})
	ct := map[string]string{"Content-Type": "application/json"}
	for _, tc := range []struct {
		name, body string
		wantStatus int
		wantAt     string
	}{
		{"LookAheadMatches", `{"password": "Passw0rdX"}`, 200, ""},
		{"LookAheadFails", `{"password": "password"}`, 422, "body.password"},
		{"UnicodePropertyMatches", `{"code": "ÉCOLE"}`, 200, ""},
		{"UnicodePropertyFails", `{"code": "École"}`, 422, "body.code"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := do(t, srv, "POST", "/u", ct, tc.body)
			if got.status != tc.wantStatus {
				t.Fatalf("status %d, want %d: %s", got.status, tc.wantStatus, got.body)
			}
			if tc.wantAt != "" {
				var p struct {
					Validation []openapi.Violation `json:"validation"`
				}
				if err := json.Unmarshal(got.body, &p); err != nil || len(p.Validation) != 1 ||
					strings.Join(p.Validation[0].Location, ".") != tc.wantAt || p.Validation[0].Code != "pattern" {
					t.Errorf("violations %s, want one pattern violation at %s", got.body, tc.wantAt)
				}
			}
		})
	}
	t.Run("CatastrophicPattern", func(t *testing.T) {
		body := `{"slow": "` + strings.Repeat("a", 40) + `!"}`
		for i := range 3 {
			start := time.Now()
			got := do(t, srv, "POST", "/u", ct, body)
			if d := time.Since(start); got.status != 200 || d > 2*time.Second {
				t.Fatalf("request %d: status %d after %v, want 200 within 2 s", i, got.status, d)
			}
		}
	})
}

// Ensure an invalid request gets the answer the operation declares, in Prism's order (422,
// else 4XX answered 422, else 400, else default answered 422), a missing credential the 4XX
// answered 401, a Prefer the mock cannot read a 422 problem, and a 204 no body and no
// Content-Type.
func TestErrorAnswers(t *testing.T) {
	t.Parallel()
	srv := serve(t, "testdata/errors.yaml", openapi.Options{})
	for _, tc := range []struct {
		name, method, path string
		header             map[string]string
		wantStatus         int
		wantType           string
		wantBody           any
	}{
		{"PathTypeGets4XX", "GET", "/range/abc", nil, 422, "application/json", map[string]any{"e": "4xx"}},
		{"HeaderFormatGets4XX", "GET", "/range/1", map[string]string{"X-Trace": "not-a-uuid"}, 422, "application/json", map[string]any{"e": "4xx"}},
		{"Only400", "GET", "/bad-request/abc", nil, 400, "application/json", map[string]any{"e": "400"}},
		{"4XXBefore400", "GET", "/both/abc", nil, 422, "application/json", map[string]any{"e": "4xx"}},
		{"Own422First", "GET", "/own/abc", nil, 422, "application/json", map[string]any{"e": "422"}},
		{"DefaultAnswered422", "GET", "/default/abc", nil, 422, "application/json", map[string]any{"e": "default"}},
		{"SecurityGets4XX", "GET", "/secured", nil, 401, "application/json", map[string]any{"e": "4xx"}},
		{"ValidRequest", "GET", "/range/1", map[string]string{"X-Trace": "095be615-a8ad-4c33-8e9c-c7612fbf6c9f"}, 200, "application/json", map[string]any{"ok": true}},
		{"PreferCodeNotANumber", "GET", "/range/1", map[string]string{"Prefer": "code=abc"}, 422, openapi.ProblemType, nil},
		{"PreferDynamicNotABoolean", "GET", "/range/1", map[string]string{"Prefer": "dynamic=maybe"}, 422, openapi.ProblemType, nil},
		{"PreferCodeNotAStatus", "GET", "/range/1", map[string]string{"Prefer": "code=42"}, 404, openapi.ProblemType, nil},
		{"PreferCodeInRange", "GET", "/range/1", map[string]string{"Prefer": "code=418"}, 418, "application/json", map[string]any{"e": "4xx"}},
		{"NoContent", "DELETE", "/gone", nil, 204, "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := do(t, srv, tc.method, tc.path, tc.header, "")
			if got.status != tc.wantStatus {
				t.Fatalf("status %d, want %d: %s", got.status, tc.wantStatus, got.body)
			}
			if ct := got.header.Values("Content-Type"); strings.Join(ct, ",") != tc.wantType {
				t.Errorf("Content-Type %q, want %q", ct, tc.wantType)
			}
			switch {
			case tc.wantBody != nil:
				if d := cmp.Diff(tc.wantBody, got.json(t)); d != "" {
					t.Errorf("body (-want +got):\n%s", d)
				}
			case tc.wantType == openapi.ProblemType:
				p, _ := got.json(t).(map[string]any)
				if p["status"] != float64(tc.wantStatus) || (tc.wantStatus == 422 && !strings.Contains(p["detail"].(string), "Prefer")) {
					t.Errorf("problem %v", p)
				}
			case len(got.body) != 0:
				t.Errorf("body %q, want none", got.body)
			}
		})
	}
}

// Ensure the query parameters __code, __example and __dynamic steer the answer as Prefer
// does (a browser sends them without a preflight), and that a Prefer header wins over them.
func TestQueryPreferences(t *testing.T) {
	t.Parallel()
	srv := serve(t, "testdata/petstore.yaml", openapi.Options{})
	for _, tc := range []struct {
		name, path string
		header     map[string]string
		wantStatus int
		wantBody   any
	}{
		{"Code", "/pets/3?__code=404", nil, 404, map[string]any{"error": "no such pet"}},
		{"Example", "/pets/3?__example=rex", nil, 200, map[string]any{"id": 2.0, "name": "Rex"}},
		{"CodeNotANumber", "/pets/3?__code=abc", nil, 422, nil},
		{"HeaderWins", "/pets/3?__code=404", map[string]string{"Prefer": "example=rex"}, 200, map[string]any{"id": 2.0, "name": "Rex"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := do(t, srv, "GET", tc.path, tc.header, "")
			if got.status != tc.wantStatus {
				t.Fatalf("status %d, want %d: %s", got.status, tc.wantStatus, got.body)
			}
			if tc.wantBody != nil {
				if d := cmp.Diff(tc.wantBody, got.json(t)); d != "" {
					t.Errorf("body (-want +got):\n%s", d)
				}
			}
		})
	}
	t.Run("Dynamic", func(t *testing.T) {
		t.Parallel()
		static := do(t, srv, "GET", "/pets", nil, "")
		seen := map[string]bool{}
		for range 5 {
			got := do(t, srv, "GET", "/pets?__dynamic=true", nil, "")
			if got.status != 200 {
				t.Fatalf("status %d", got.status)
			}
			seen[string(got.body)] = true
		}
		if len(seen) < 2 || seen[string(static.body)] {
			t.Errorf("__dynamic=true answered %d different bodies, the static one among them: %v", len(seen), seen[string(static.body)])
		}
	})
}
