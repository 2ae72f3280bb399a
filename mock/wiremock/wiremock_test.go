package wiremock

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeDir writes files (path → content) under a new directory.
func writeDir(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

var mappings = map[string]string{
	"mappings/a-exact.json":    `{"name":"exact","request":{"method":"GET","url":"/exact?x=1"},"response":{"status":200,"body":"exact"}}`,
	"mappings/b-path.json":     `{"request":{"method":"GET","urlPath":"/things","queryParameters":{"q":{"equalTo":"Ada","caseInsensitive":true},"page":{"absent":true}}},"response":{"status":200,"jsonBody":{"found":"ada"},"headers":{"X-Wm":["1","2"]}}}`,
	"mappings/c-pattern.json":  `{"request":{"method":"ANY","urlPattern":"/re/[0-9]+\\?.*"},"response":{"status":201,"body":"regex"}}`,
	"mappings/d-pathpat.json":  `{"request":{"urlPathPattern":"/files/.*\\.txt"},"response":{"status":200,"body":"txt"}}`,
	"mappings/e-template.json": `{"request":{"method":"GET","urlPathTemplate":"/contacts/{id}/addresses/{addr}","pathParameters":{"id":{"matches":"[0-9]+"}}},"response":{"status":200,"body":"template"}}`,
	"mappings/f-headers.json":  `{"request":{"method":"GET","urlPath":"/h","headers":{"X-Key":{"contains":"secret"},"X-Bad":{"absent":true}},"cookies":{"session":{"doesNotMatch":"expired.*"}}},"response":{"status":200,"body":"headers"}}`,
	"mappings/g-body.json": `{"mappings":[
		{"name":"json","request":{"method":"POST","urlPath":"/b","bodyPatterns":[{"equalToJson":{"a":[1,2],"b":{"c":true}},"ignoreArrayOrder":true,"ignoreExtraElements":true}]},"response":{"status":200,"body":"json"}},
		{"name":"jsonpath","request":{"method":"POST","urlPath":"/b","bodyPatterns":[{"matchesJsonPath":"$.items[0].id"}]},"response":{"status":200,"body":"jsonpath"}},
		{"name":"contains","request":{"method":"POST","urlPath":"/b","bodyPatterns":[{"contains":"hello"},{"doesNotMatch":".*bye.*"}]},"response":{"status":200,"body":"contains"}}]}`,
	"mappings/h-priority.json": `{"mappings":[
		{"name":"catch-all","priority":10,"request":{"method":"ANY","urlPattern":"/p/.*"},"response":{"status":200,"body":"low"}},
		{"name":"specific","priority":1,"request":{"method":"GET","urlPath":"/p/1"},"response":{"status":200,"body":"high"}},
		{"name":"older","request":{"method":"GET","urlPath":"/same"},"response":{"status":200,"body":"older"}},
		{"name":"newer","request":{"method":"GET","urlPath":"/same"},"response":{"status":200,"body":"newer"}}]}`,
	"mappings/i-bodies.json": `{"mappings":[
		{"request":{"urlPath":"/b64"},"response":{"base64Body":"aGVsbG8=","statusMessage":"Very OK"}},
		{"request":{"urlPath":"/file"},"response":{"bodyFileName":"sub/hello.txt","headers":{"Content-Type":"text/plain"}}},
		{"request":{"urlPath":"/fault"},"response":{"fault":"CONNECTION_RESET_BY_PEER"}},
		{"request":{"urlPath":"/delay"},"response":{"body":"late","fixedDelayMilliseconds":1,"delayDistribution":{"type":"uniform","lower":0,"upper":1}}}]}`,
	"mappings/j-scenario.json": `{"mappings":[
		{"scenarioName":"todo","requiredScenarioState":"Started","newScenarioState":"added","request":{"method":"POST","urlPath":"/todo"},"response":{"status":201,"body":"added"}},
		{"scenarioName":"todo","requiredScenarioState":"Started","request":{"method":"GET","urlPath":"/todo"},"response":{"body":"[]"}},
		{"scenarioName":"todo","requiredScenarioState":"added","request":{"method":"GET","urlPath":"/todo"},"response":{"body":"[\"milk\"]"}}]}`,
	"__files/sub/hello.txt": "hello from __files",
}

type call struct {
	method, path, body string
	headers            []string
}

// Ensure each supported request matcher and response field behaves as WireMock documents,
// mapping precedence included, and a miss answers 404 "Request was not matched".
func TestStubs_Serve(t *testing.T) {
	t.Parallel()
	stubs, problems, err := Load(writeDir(t, mappings))
	if err != nil || len(problems) > 0 {
		t.Fatalf("load: %v %v", err, problems)
	}
	hs := httptest.NewServer(stubs)
	t.Cleanup(hs.Close)
	for _, tc := range []struct {
		name       string
		c          call
		wantStatus int
		wantBody   string
	}{
		{"URLExact", call{"GET", "/exact?x=1", "", nil}, 200, "exact"},
		{"URLExactOtherQuery", call{"GET", "/exact?x=2", "", nil}, 404, "Request was not matched"},
		{"QueryCaseInsensitive", call{"GET", "/things?q=ADA", "", nil}, 200, `{"found":"ada"}`},
		{"QueryAbsentViolated", call{"GET", "/things?q=ada&page=2", "", nil}, 404, ""},
		{"URLPattern", call{"DELETE", "/re/42?z=1", "", nil}, 201, "regex"},
		{"URLPatternNoQuery", call{"DELETE", "/re/42", "", nil}, 404, ""},
		{"URLPathPattern", call{"GET", "/files/a/b.txt?v=1", "", nil}, 200, "txt"},
		{"PathTemplate", call{"GET", "/contacts/7/addresses/home", "", nil}, 200, "template"},
		{"PathTemplateParamMismatch", call{"GET", "/contacts/x/addresses/home", "", nil}, 404, ""},
		{"PathTemplateTooFewSegments", call{"GET", "/contacts/7/addresses", "", nil}, 404, ""},
		{"PathTemplateTooManySegments", call{"GET", "/contacts/7/addresses/home/x", "", nil}, 404, ""},
		{"PathTemplateEmptyParam", call{"GET", "/contacts/7/addresses/", "", nil}, 404, ""},
		{"PathTemplateLiteralMismatch", call{"GET", "/contacts/7/phones/home", "", nil}, 404, ""},
		{"Headers", call{"GET", "/h", "", []string{"X-Key", "my-secret-1", "Cookie", "session=fresh"}}, 200, "headers"},
		{"HeaderAbsentViolated", call{"GET", "/h", "", []string{"X-Key", "secret", "X-Bad", "1"}}, 404, ""},
		{"CookieDoesNotMatchViolated", call{"GET", "/h", "", []string{"X-Key", "secret", "Cookie", "session=expired-1"}}, 404, ""},
		{"EqualToJSON", call{"POST", "/b", `{"b":{"c":true},"a":[2,1],"extra":1}`, nil}, 200, "json"},
		{"MatchesJSONPath", call{"POST", "/b", `{"items":[{"id":3}]}`, nil}, 200, "jsonpath"},
		{"JSONPathEmpty", call{"POST", "/b", `{"items":[]}`, nil}, 404, ""},
		{"ContainsAndDoesNotMatch", call{"POST", "/b", `say hello`, nil}, 200, "contains"},
		{"DoesNotMatchViolated", call{"POST", "/b", `hello bye`, nil}, 404, ""},
		{"PriorityWins", call{"GET", "/p/1", "", nil}, 200, "high"},
		{"CatchAll", call{"GET", "/p/2", "", nil}, 200, "low"},
		{"LastAddedWins", call{"GET", "/same", "", nil}, 200, "newer"},
		{"Base64Body", call{"GET", "/b64", "", nil}, 200, "hello"},
		{"BodyFile", call{"GET", "/file", "", nil}, 200, "hello from __files"},
		{"Delay", call{"GET", "/delay", "", nil}, 200, "late"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			status, body, _ := send(t, hs.URL, tc.c)
			if status != tc.wantStatus || !strings.Contains(body, tc.wantBody) {
				t.Fatalf("%d %q, want %d with %q", status, body, tc.wantStatus, tc.wantBody)
			}
		})
	}
	t.Run("Fault", func(t *testing.T) {
		t.Parallel()
		if _, err := http.Get(hs.URL + "/fault"); err == nil {
			t.Fatal("a fault answered instead of closing the connection")
		}
	})
	t.Run("StatusMessage", func(t *testing.T) {
		t.Parallel()
		resp, err := http.Get(hs.URL + "/b64")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.Status != "200 Very OK" {
			t.Fatalf("status line %q", resp.Status)
		}
	})
	t.Run("JSONBodyContentType", func(t *testing.T) {
		t.Parallel()
		_, _, h := send(t, hs.URL, call{"GET", "/things?q=ada", "", nil})
		if h.Get("Content-Type") != "application/json" || len(h.Values("X-Wm")) != 2 {
			t.Fatalf("headers %v", h)
		}
	})
}

// Ensure scenarios move on newScenarioState and go back to Started on reset.
func TestStubs_Scenarios(t *testing.T) {
	t.Parallel()
	stubs, _, err := Load(writeDir(t, mappings))
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(stubs)
	t.Cleanup(hs.Close)
	steps := []struct {
		c    call
		want string
	}{
		{call{"GET", "/todo", "", nil}, "[]"},
		{call{"POST", "/todo", "", nil}, "added"},
		{call{"GET", "/todo", "", nil}, `["milk"]`},
		{call{"POST", "/todo", "", nil}, "Request was not matched"}, // only from Started
	}
	for i, st := range steps {
		if _, body, _ := send(t, hs.URL, st.c); !strings.Contains(body, st.want) {
			t.Fatalf("step %d: %q, want %q", i, body, st.want)
		}
	}
	stubs.ResetScenarios()
	if _, body, _ := send(t, hs.URL, call{"GET", "/todo", "", nil}); body != "[]" {
		t.Fatalf("after reset: %q", body)
	}
}

// Ensure a mapping without a response answers 200 with no body, and one without a request
// matches every request, as WireMock's defaults do (ok(), ANYTHING); a mapping without a
// response once crashed the handler.
func TestLoad_Defaults(t *testing.T) {
	t.Parallel()
	stubs, problems, err := Load(writeDir(t, map[string]string{
		"mappings/d.json": `{"mappings":[
			{"request":{"urlPath":"/no-response"}},
			{"priority":10,"response":{"status":418,"body":"anything"}}]}`,
	}))
	if err != nil || len(problems) != 0 {
		t.Fatalf("%v %v", err, problems)
	}
	hs := httptest.NewServer(stubs)
	t.Cleanup(hs.Close)
	for _, tc := range []struct {
		c      call
		status int
		body   string
	}{
		{call{"GET", "/no-response", "", nil}, 200, ""},
		{call{"DELETE", "/anything/else?x=1", "", nil}, 418, "anything"},
	} {
		if status, body, _ := send(t, hs.URL, tc.c); status != tc.status || body != tc.body {
			t.Errorf("%s %s: %d %q, want %d %q", tc.c.method, tc.c.path, status, body, tc.status, tc.body)
		}
	}
}

// Ensure what is not supported is reported with its file, mapping and field, and the
// mapping is skipped, never served half-understood; bodyFileName cannot leave __files.
func TestLoad_Problems(t *testing.T) {
	t.Parallel()
	dir := writeDir(t, map[string]string{
		"mappings/bad.json": `{"mappings":[
			{"name":"templated","request":{"urlPath":"/t"},"response":{"body":"{{request.path}}","transformers":["response-template"]}},
			{"id":"0000-1","request":{"urlPath":"/x","bodyPatterns":[{"equalToXml":"<a/>"}]},"response":{"status":200}},
			{"request":{"urlPath":"/y","queryParameters":{"q":{"hasExactly":[{"equalTo":"1"}]}}},"response":{}},
			{"request":{"urlPathPattern":"/(?=look)"},"response":{}},
			{"request":{"urlPath":"/escape"},"response":{"bodyFileName":"../secret.txt"}},
			{"request":{"urlPath":"/jp"},"response":{},"postServeActions":[]},
			{"request":{"urlPath":"/jp2","bodyPatterns":[{"matchesJsonPath":"$.a[?(@.b == 1)]"}]},"response":{}},
			{"scenarioName":7,"request":{"urlPath":"/sc"},"response":{}},
			{"request":{"urlPath":"/ok"},"response":{"body":"fine"}},
			{"request":{"method":"get","urlPath":"/lower"},"response":{"body":"never in WireMock"}}]}`,
		"mappings/broken.json": `{not json`,
		"secret.txt":           "top secret",
	})
	stubs, problems, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if stubs.Len() != 1 {
		t.Fatalf("%d mappings served, want only /ok", stubs.Len())
	}
	var all []string
	for _, p := range problems {
		all = append(all, p.String())
	}
	text := strings.Join(all, "\n")
	for _, want := range []string{
		`mappings/bad.json:2: mapping "templated": response.transformers: not supported`,
		`mappings/bad.json:3: mapping 0000-1: request.bodyPatterns[0].equalToXml: not supported`,
		`mapping #3: request.queryParameters.q.hasExactly: not supported`,
		`mapping #4: request.urlPathPattern: the regular expression does not compile`,
		`mapping #5: response.bodyFileName: "../secret.txt" is outside __files`,
		`mapping #6: postServeActions: not supported`,
		`mapping #7: request.bodyPatterns[0].matchesJsonPath`,
		`mapping #8: scenarioName: must be a string`,
		`mappings/broken.json:1: not a JSON object`,
		`mapping #10: request.method: "get" never matches in WireMock, which compares methods case-sensitively; write "GET"`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("problems lack %q:\n%s", want, text)
		}
	}
}

// Ensure every problem names the line it is about, as a mock file's problems do: a syntax
// error its position, a mapping's field the line that writes it (else the mapping's first
// line), so a directory of long mapping files points at what to fix. Problems come out in a
// stable order, whatever the order of the fields.
func TestLoad_ProblemLines(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, content string
		want          []string
	}{
		{"SyntaxError", "{\n \"request\": {\"method\": \"GET\",\n  \"url\": \"/a\",},\n \"response\": {}\n}",
			[]string{`mappings/m.json:3: not a JSON object: invalid character '}' looking for beginning of object key string`}},
		{"NotAnObject", "\n\n[1, 2]",
			[]string{`mappings/m.json:3: not a JSON object`}},
		{"SingleMappingField", "{\n \"request\": {\"url\": \"/a\"},\n \"response\": {\n  \"status\": 200,\n  \"transformers\": [\"response-template\"]\n }\n}",
			[]string{`mappings/m.json:5: response.transformers: not supported`}},
		{"ListFieldsInOrder", "{\"mappings\": [\n {\"request\": {\"url\": \"/ok\"}},\n {\"name\": \"two\",\n  \"request\": {\"method\": \"get\",\n   \"bodyPatterns\": [{\"equalTo\": \"x\"},\n     {\"equalToXml\": \"<a/>\"}]},\n  \"response\": {\"status\": 900}}\n]}",
			[]string{
				`mappings/m.json:4: mapping "two": request.method: "get" never matches`,
				`mappings/m.json:6: mapping "two": request.bodyPatterns[1]: needs exactly one of`,
				`mappings/m.json:6: mapping "two": request.bodyPatterns[1].equalToXml: not supported`,
				`mappings/m.json:7: mapping "two": response.status: must be an HTTP status`,
			}},
		{"HeaderHTTPRefuses", "{\"request\": {\"url\": \"/h\"},\n \"response\": {\"headers\": {\n  \"Content Type\": \"text/plain\",\n  \"X-A\": [\"ok\", \"two\\nlines\"]}}}",
			[]string{
				`mappings/m.json:3: response.headers.Content Type: "Content Type" is not a valid HTTP header name`,
				`mappings/m.json:4: response.headers.X-A: the value holds a line break or NUL`,
			}},
		{"MappingNotAnObject", "{\"mappings\": [\n {\"request\": {\"url\": \"/ok\"}},\n\n 7]}",
			[]string{`mappings/m.json:4: mapping #2: not a JSON object`}},
		{"FieldMissingFromTheText", "{\"mappings\": [{},\n {\"scenarioName\": \"\",\n  \"requiredScenarioState\": \"x\"}]}",
			[]string{`mappings/m.json:2: mapping #2: scenarioName: requiredScenarioState and newScenarioState need a scenarioName`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, problems, err := Load(writeDir(t, map[string]string{"mappings/m.json": tc.content}))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, p := range problems {
				got = append(got, p.String())
			}
			if len(got) != len(tc.want) {
				t.Fatalf("problems:\n%s\nwant %d", strings.Join(got, "\n"), len(tc.want))
			}
			for i, want := range tc.want {
				if !strings.HasPrefix(got[i], want) {
					t.Errorf("problem %d:\n got %s\nwant %s…", i, got[i], want)
				}
			}
		})
	}
}

// Ensure no body file outside the mappings' own __files is served through a __files that is a
// link to another directory (a cloned repository's).
func TestLoad_BodyFilesStayInside(t *testing.T) {
	t.Parallel()
	secret := writeDir(t, map[string]string{"creds.txt": "top secret"})
	dir := writeDir(t, map[string]string{
		"mappings/a.json": `{"request":{"urlPath":"/creds"},"response":{"bodyFileName":"creds.txt"}}`,
	})
	if err := os.Symlink(secret, filepath.Join(dir, "__files")); err != nil {
		t.Fatal(err)
	}
	stubs, problems, err := Load(dir)
	if err != nil || stubs.Len() != 0 || len(problems) != 1 || !strings.Contains(problems[0].String(), `"creds.txt" leads outside __files`) {
		t.Fatalf("err %v, %d served, problems %v: want the file refused", err, stubs.Len(), problems)
	}
}

// Ensure a directory of 1,000 mappings loads in well under a second's work and serves the
// last one (a load-time check, not a timing assertion: it counts mappings).
func TestLoad_ManyMappings(t *testing.T) {
	t.Parallel()
	files := map[string]string{}
	for i := range 1000 {
		files[fmt.Sprintf("mappings/m%04d.json", i)] = fmt.Sprintf(`{"request":{"method":"GET","urlPath":"/m/%d"},"response":{"jsonBody":{"n":%d}}}`, i, i)
	}
	stubs, problems, err := Load(writeDir(t, files))
	if err != nil || len(problems) > 0 || stubs.Len() != 1000 {
		t.Fatalf("load: %v %v %d", err, problems, stubs.Len())
	}
	hs := httptest.NewServer(stubs)
	t.Cleanup(hs.Close)
	if _, body, _ := send(t, hs.URL, call{"GET", "/m/999", "", nil}); body != `{"n":999}` {
		t.Fatalf("got %q", body)
	}
}

func send(t *testing.T, base string, c call) (int, string, http.Header) {
	t.Helper()
	var rd io.Reader
	if c.body != "" {
		rd = strings.NewReader(c.body)
	}
	req, err := http.NewRequest(c.method, base+c.path, rd)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(c.headers); i += 2 {
		req.Header.Set(c.headers[i], c.headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", c.method, c.path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

// Ensure body patterns match as WireMock 3 does (checked against WireMock 3.13.2):
// equalToJson with ignoreExtraElements alone compares arrays position by position with extra
// items only after the expected ones, with ignoreArrayOrder too any assignment of expected
// items to distinct request items, numbers by exact value; caseInsensitive is equalTo's only.
func TestBodyPatterns_WireMockSemantics(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, pattern, body string
		want                bool
	}{
		{"ExtraBetweenRefused", `{"equalToJson":{"x":[1,3]},"ignoreExtraElements":true}`, `{"x":[1,2,3]}`, false},
		{"ExtraAfter", `{"equalToJson":{"x":[1,2]},"ignoreExtraElements":true}`, `{"x":[1,2,3]}`, true},
		{"ExtraBeforeRefused", `{"equalToJson":{"x":[1,2]},"ignoreExtraElements":true}`, `{"x":[0,1,2]}`, false},
		{"ExtraFieldsInItems", `{"equalToJson":{"x":[{"a":1}]},"ignoreExtraElements":true}`, `{"x":[{"a":1,"b":2},5]}`, true},
		{"ContainsCaseInsensitiveDropped", `{"contains":"abc","caseInsensitive":true}`, `xABCx`, false},
		{"EqualToCaseInsensitive", `{"equalTo":"abc","caseInsensitive":true}`, `ABC`, true},
		{"ExactArrayOrder", `{"equalToJson":{"x":[1,2]}}`, `{"x":[2,1]}`, false},
		{"UnorderedFirstFitWouldFail", `{"equalToJson":[{"a":1},{"a":1,"b":2}],"ignoreArrayOrder":true,"ignoreExtraElements":true}`, `[{"a":1,"b":2},{"a":1}]`, true},
		{"UnorderedExtraBetween", `{"equalToJson":[{"a":1},{"a":1,"b":2}],"ignoreArrayOrder":true,"ignoreExtraElements":true}`, `[{"a":1,"b":2},{"c":1},{"a":1}]`, true},
		{"UnorderedOneItemForTwo", `{"equalToJson":[{"a":1},{"a":1,"b":2}],"ignoreArrayOrder":true,"ignoreExtraElements":true}`, `[{"a":1,"b":2},{"c":1}]`, false},
		{"UnorderedNested", `{"equalToJson":[[{"a":1},{"a":1,"b":2}],[3]],"ignoreArrayOrder":true,"ignoreExtraElements":true}`, `[[3,4],[{"a":1,"b":2},{"a":1}]]`, true},
		{"UnorderedExact", `{"equalToJson":[1,{"a":[2,1]},"x",null],"ignoreArrayOrder":true}`, `[null,"x",{"a":[1,2]},1]`, true},
		{"UnorderedCountsDuplicates", `{"equalToJson":[1,1,2],"ignoreArrayOrder":true}`, `[1,2,2]`, false},
		{"NumbersExact", `{"equalToJson":"{\"n\":9007199254740993}"}`, `{"n":9007199254740992}`, false},
		{"NumbersExactObject", `{"equalToJson":{"n":9007199254740993}}`, `{"n":9007199254740993}`, true},
		{"NumbersByValue", `{"equalToJson":{"n":[1,100,-0.5,0]}}`, `{"n":[1.0,1e2,-5E-1,-0.0]}`, true},
		{"NumbersUnordered", `{"equalToJson":[100,9007199254740993],"ignoreArrayOrder":true}`, `[9007199254740993,1.00e2]`, true},
		{"NumbersUnorderedExact", `{"equalToJson":[9007199254740993],"ignoreArrayOrder":true}`, `[9007199254740992]`, false},
		{"UnorderedNoExtraRefused", `{"equalToJson":[1,2],"ignoreArrayOrder":true}`, `[2,1,3]`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := bodyMatches(t, tc.pattern, tc.body); got != tc.want {
				t.Fatalf("%s against %s: %v, want %v", tc.pattern, tc.body, got, tc.want)
			}
		})
	}
}

// bodyMatches loads one bodyPatterns entry and reports whether body matches it.
func bodyMatches(t *testing.T, pattern, body string) bool {
	t.Helper()
	l := &loader{rel: "mappings/m.json"}
	l.mapping([]byte(`{"request":{"method":"POST","bodyPatterns":[`+pattern+`]}}`), "")
	if len(l.problems) > 0 || len(l.stubs) != 1 {
		t.Fatalf("pattern %s: %v", pattern, l.problems)
	}
	var parsed jsonBody
	return l.stubs[0].body[0].matches([]byte(body), &parsed)
}

// Ensure an unordered comparison stays within maxJSONSteps: 1,000 objects in reverse order
// (about 1.6 million steps) still match, and 3,000 (about 14 million) give up and do not,
// instead of holding a core for seconds per request.
func TestEqualToJSON_Bounded(t *testing.T) {
	t.Parallel()
	arrays := func(n int) (want, got string) {
		var w, g []string
		for i := range n {
			w = append(w, fmt.Sprintf(`{"k":%d}`, i))
			g = append(g, fmt.Sprintf(`{"k":%d,"extra":true}`, n-1-i))
		}
		return "[" + strings.Join(w, ",") + "]", "[" + strings.Join(g, ",") + "]"
	}
	for _, tc := range []struct {
		n    int
		want bool
	}{{1000, true}, {3000, false}} {
		w, g := arrays(tc.n)
		pattern := `{"equalToJson":` + w + `,"ignoreArrayOrder":true,"ignoreExtraElements":true}`
		if got := bodyMatches(t, pattern, g); got != tc.want {
			t.Errorf("%d objects in reverse order: %v, want %v", tc.n, got, tc.want)
		}
	}
}

// Ensure numbers key by their exact decimal value.
func TestNumberKey(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		a, b string
		same bool
	}{
		{"100", "1e2", true},
		{"100", "1E+2", true},
		{"12300e-2", "123", true},
		{"0.000", "0", true},
		{"-0", "0", true},
		{"-1.50", "-15e-1", true},
		{"9007199254740993", "9007199254740992", false},
		{"1", "-1", false},
		{"0.1", "0.10000000000000001", false},
		{"1e9999999999999999999", "1e9999999999999999999", true},
		{"1e9999999999999999999", "10e9999999999999999998", false}, // by text past 15 exponent digits
	} {
		if got := numberKey(tc.a) == numberKey(tc.b); got != tc.same {
			t.Errorf("%s and %s: same %v, want %v (%s, %s)", tc.a, tc.b, got, tc.same, numberKey(tc.a), numberKey(tc.b))
		}
	}
}

// Ensure header, query and cookie matchers see what WireMock sees (each row checked against
// WireMock 3.13.2).
func TestStubs_ValueMatchers(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, request string // request: a mapping's "request" members besides the method
		target        string
		headers       []string // name, value pairs; "Host" sets the request's host
		want          bool
	}{
		{"HostEqualTo", `"headers":{"Host":{"equalTo":"example.test"}}`, "/", []string{"Host", "example.test"}, true},
		{"HostWithPortDiffers", `"headers":{"Host":{"equalTo":"example.test"}}`, "/", []string{"Host", "example.test:8080"}, false},
		{"HostWithPort", `"headers":{"host":{"equalTo":"example.test:8080"}}`, "/", []string{"Host", "example.test:8080"}, true},
		{"HeaderDoesNotMatchAbsent", `"headers":{"X-A":{"doesNotMatch":"x.*"}}`, "/", nil, true},
		{"HeaderDoesNotMatchViolated", `"headers":{"X-A":{"doesNotMatch":"x.*"}}`, "/", []string{"X-A", "xy"}, false},
		{"HeaderDoesNotMatchAnyValue", `"headers":{"X-A":{"doesNotMatch":"x.*"}}`, "/", []string{"X-A", "xx", "X-A", "b"}, true},
		{"QueryDoesNotMatchAbsent", `"queryParameters":{"a":{"doesNotMatch":"x.*"}}`, "/?b=xx", nil, true},
		{"QueryDoesNotMatchViolated", `"queryParameters":{"a":{"doesNotMatch":"x.*"}}`, "/?a=xx", nil, false},
		{"QueryDoesNotMatchAnyValue", `"queryParameters":{"a":{"doesNotMatch":"x.*"}}`, "/?a=xx&a=b", nil, true},
		{"CookieDoesNotMatchAbsent", `"cookies":{"c":{"doesNotMatch":"x.*"}}`, "/", nil, false},
		{"CookieDoesNotMatchOtherCookie", `"cookies":{"c":{"doesNotMatch":"x.*"}}`, "/", []string{"Cookie", "other=1"}, false},
		{"CookieDoesNotMatch", `"cookies":{"c":{"doesNotMatch":"x.*"}}`, "/", []string{"Cookie", "c=ok"}, true},
		{"ContainsCaseInsensitiveDropped", `"headers":{"X-A":{"contains":"abc","caseInsensitive":true}}`, "/", []string{"X-A", "xABCx"}, false},
		{"ContainsCaseInsensitiveSameCase", `"headers":{"X-A":{"contains":"abc","caseInsensitive":true}}`, "/", []string{"X-A", "xabcx"}, true},
		{"EqualToCaseInsensitive", `"headers":{"X-A":{"equalTo":"abc","caseInsensitive":true}}`, "/", []string{"X-A", "ABC"}, true},
		{"CookieAnyOfTwo", `"cookies":{"sid":{"equalTo":"b"}}`, "/", []string{"Cookie", "sid=a; sid=b"}, true},
		{"CookieAnyOfTwoHeaders", `"cookies":{"sid":{"equalTo":"b"}}`, "/", []string{"Cookie", "sid=a", "Cookie", "x=1; sid=b"}, true},
		{"CookieNoneOfTwo", `"cookies":{"sid":{"equalTo":"c"}}`, "/", []string{"Cookie", "sid=a; sid=b"}, false},
		{"HostAbsentNever", `"headers":{"Host":{"absent":true}}`, "/", []string{"Host", "example.test"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			l := &loader{rel: "mappings/m.json"}
			l.mapping([]byte(`{"request":{"method":"GET",`+tc.request+`},"response":{"body":"hit"}}`), "")
			if len(l.problems) > 0 {
				t.Fatalf("load: %v", l.problems)
			}
			req := httptest.NewRequest("GET", "http://mock.test"+tc.target, nil)
			for i := 0; i+1 < len(tc.headers); i += 2 {
				if tc.headers[i] == "Host" {
					req.Host = tc.headers[i+1]
					continue
				}
				req.Header.Add(tc.headers[i], tc.headers[i+1])
			}
			w := httptest.NewRecorder()
			newStubs(l.stubs).ServeHTTP(w, req)
			if got := w.Code == http.StatusOK; got != tc.want {
				t.Fatalf("%s %v: matched %v, want %v (%d %s)", tc.target, tc.headers, got, tc.want, w.Code, w.Body)
			}
		})
	}
}

// Ensure a jsonBody answers its keys in the mapping's order, as WireMock does, in a mapping
// file of its own and in a {"mappings": [...]} list.
func TestLoad_JSONBodyKeyOrder(t *testing.T) {
	t.Parallel()
	const body = `{"z":1,"a":[{"y":1.0,"b":"x"}],"m":{"y":null,"b":2}}`
	stubs, problems, err := Load(writeDir(t, map[string]string{
		"mappings/one.json":  `{"request":{"urlPath":"/one"},"response":{"jsonBody": ` + body + `}}`,
		"mappings/list.json": `{"mappings":[{"request":{"urlPath":"/list"},"response":{"jsonBody":` + body + `}}]}`,
	}))
	if err != nil || len(problems) > 0 {
		t.Fatalf("load: %v %v", err, problems)
	}
	for _, p := range []string{"/one", "/list"} {
		w := httptest.NewRecorder()
		stubs.ServeHTTP(w, httptest.NewRequest("GET", p, nil))
		if got := w.Body.String(); got != body {
			t.Errorf("GET %s: %s, want %s", p, got, body)
		}
	}
}
