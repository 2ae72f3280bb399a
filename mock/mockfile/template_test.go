package mockfile

import (
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"testing"

	"github.com/acme/app/mock"
)

// Ensure the fast path renders exactly what text/template renders, and is taken only for
// plain lookups.
func TestTemplate_FastPathMatchesTextTemplate(t *testing.T) {
	t.Parallel()
	req := &mock.Request{
		Params: map[string]string{"id": "42"},
		Query:  url.Values{"page": {"2", "3"}},
		Header: http.Header{"Authorization": {"Bearer t"}},
	}
	for _, tc := range []struct {
		text     string
		wantFast bool
		want     string
	}{
		{"{{.Params.id}}", true, "42"},
		{"/users/{{.Params.id}}?p={{.Query.page}}", true, "/users/42?p=2"},
		{"{{ .Headers.Authorization }}|{{.Headers.authorization}}", true, "Bearer t|Bearer t"},
		{"{{.Params.nope}}{{.Query.nope}}{{.Headers.Nope}}", true, ""},
		{"{{.Params.id | upper}}", false, "42"},
		{"{{- .Params.id -}}", false, "42"},
		{"{{uuid | len}}", false, "36"},
	} {
		tm, err := parseTemplate("t", tc.text)
		if err != nil {
			t.Fatal(err)
		}
		if got := tm.segs != nil; got != tc.wantFast {
			t.Errorf("%q: fast=%v, want %v", tc.text, got, tc.wantFast)
		}
		got, err := tm.exec(newView(req))
		if err != nil || got != tc.want {
			t.Errorf("%q: got %q, %v; want %q", tc.text, got, err, tc.want)
		}
		if got := tm.t != nil; got == tc.wantFast {
			t.Errorf("%q: keeps a text/template=%v, want %v (only off the fast path)", tc.text, got, !tc.wantFast)
		}
		ref, err := textTemplate("t", tc.text)
		if err != nil {
			t.Fatal(err)
		}
		slow := &tmpl{t: ref}
		if s, _ := slow.exec(newView(req)); s != got {
			t.Errorf("%q: fast %q != text/template %q", tc.text, got, s)
		}
	}
}

// Ensure .Body reads a JSON text body, a form and plain text as before, and that a view
// parses the body once: later calls answer the same value.
func TestTemplate_BodyParsedOnce(t *testing.T) {
	t.Parallel()
	form := http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}
	for _, tc := range []struct {
		body   any
		header http.Header
		want   any
	}{
		{nil, nil, jsonObject{}},
		{`{"email":"a@b.c","tags":["x"]}`, nil, jsonObject{"email": "a@b.c", "tags": jsonArray{"x"}}},
		{"null", nil, nil},
		{"a=1&b=2&a=3", form, jsonObject{"a": "1", "b": "2"}},
		{"plain text", nil, "plain text"},
		{map[string]any{"x": 1.0}, nil, jsonObject{"x": 1.0}},
	} {
		v := newView(&mock.Request{Body: tc.body, Header: tc.header})
		first := v.Body()
		if !reflect.DeepEqual(first, tc.want) {
			t.Errorf("%v: Body()=%#v, want %#v", tc.body, first, tc.want)
		}
		if m, ok := first.(jsonObject); ok {
			if again := v.Body().(jsonObject); fmt.Sprintf("%p", again) != fmt.Sprintf("%p", m) {
				t.Errorf("%v: the second Body() built a new map", tc.body)
			}
		} else if again := v.Body(); again != first {
			t.Errorf("%v: the second Body()=%#v, want %#v", tc.body, again, first)
		}
	}
}

// Ensure a query parameter's list of values prints as JSON, as the body's arrays do (Go's
// [a b] could not be read back, and loses the values' spaces), and still works with index,
// range, len and json; a parameter that is not sent is an empty list.
func TestTemplate_QueryAllPrintsAsJSON(t *testing.T) {
	t.Parallel()
	query := url.Values{"tag": {"a b", "c"}}
	for _, tc := range []struct{ text, want string }{
		{`{{.QueryAll.tag}}`, `["a b","c"]`},
		{`{"tags": {{.QueryAll.tag}}}`, `{"tags": ["a b","c"]}`},
		{`{{index .QueryAll.tag 1}} {{len .QueryAll.tag}}`, `c 2`},
		{`{{range .QueryAll.tag}}[{{.}}]{{end}}`, `[a b][c]`},
		{`{{json .QueryAll.tag}}`, `["a b","c"]`},
		{`{{.QueryAll.none}} {{len .QueryAll.none}}`, `[] 0`},
	} {
		tm, err := parseTemplate("t", tc.text)
		if err != nil {
			t.Fatalf("%s: %v", tc.text, err)
		}
		got, err := tm.exec(newView(&mock.Request{Query: query}))
		if err != nil || got != tc.want {
			t.Errorf("%s: %q, %v; want %q", tc.text, got, err, tc.want)
		}
	}
}

// Ensure objects and arrays of the body print as JSON, and still work with field access,
// index, range, len and json.
func TestTemplate_BodyObjectsPrintAsJSON(t *testing.T) {
	t.Parallel()
	body := `{"user":{"name":"Ada","tags":["a","b"]},"n":2}`
	for _, tc := range []struct{ text, want string }{
		{`{{.Body.user}}`, `{"name":"Ada","tags":["a","b"]}`},
		{`{{.Body.user.tags}}`, `["a","b"]`},
		{`{{.Body.user.name}} {{index .Body.user.tags 1}} {{len .Body.user.tags}}`, `Ada b 2`},
		{`{{range .Body.user.tags}}[{{.}}]{{end}}`, `[a][b]`},
		{`{{json .Body.user}}`, `{"name":"Ada","tags":["a","b"]}`},
		{`{"echo": {{.Body}}}`, `{"echo": {"n":2,"user":{"name":"Ada","tags":["a","b"]}}}`},
		{`{{.Body.n}}`, `2`},
	} {
		tm, err := parseTemplate("t", tc.text)
		if err != nil {
			t.Fatalf("%s: %v", tc.text, err)
		}
		got, err := tm.exec(newView(&mock.Request{Body: body}))
		if err != nil || got != tc.want {
			t.Errorf("%s: %q, %v; want %q", tc.text, got, err, tc.want)
		}
	}
}
