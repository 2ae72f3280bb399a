package mockserver

import (
	"net/http"
	"net/url"
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
		slow := &tmpl{t: tm.t}
		if s, _ := slow.exec(newView(req)); s != got {
			t.Errorf("%q: fast %q != text/template %q", tc.text, got, s)
		}
	}
}
