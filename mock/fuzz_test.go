package mock

import (
	"strings"
	"testing"
)

// FuzzMatch checks that matching never panics, that a match's parameters
// come from the URL, and that the trie agrees with the single-pattern
// matcher.
func FuzzMatch(f *testing.F) {
	for _, s := range [][2]string{
		{"/users/:id", "/users/42"}, {"/files/*", "/files/a/b"}, {"/a/*/c", "/a/b/c"}, {"/", "/"},
		{"/x/:a/:b", "//x/%20/../y/z"}, {"GET /users/:id", "http://h/users/1?q#f"}, {"/:", "/:"}, {"*", "*"},
		{"/a%zz/:p", "/a%zz/%"}, {"/{id}", "/{id}"},
	} {
		f.Add(s[0], s[1], false, false)
	}
	f.Fuzz(func(t *testing.T, pattern, rawURL string, caseSensitive, exact bool) {
		cfg := DefaultRouteMatchingConfig()
		cfg.CaseSensitive, cfg.ExactMatch = caseSensitive, exact
		m := NewMatcher(cfg)
		r := m.Match(pattern, rawURL, "GET")
		if !r.Matches {
			return
		}
		for k, v := range r.Params {
			if k != "*" && v == "" {
				t.Fatalf("empty parameter %q for %q on %q", k, pattern, rawURL)
			}
		}
		method, p := splitRouteKey(pattern)
		if method == "" || method == "GET" || method == "*" {
			tb := newTable(compileRoutes(m, Definitions{"GET " + p: JSON(200, nil)}))
			var b1, b2 [16]string
			segs := m.split(m.stripPrefix(urlPath(rawURL)), b1[:0], false)
			if e := tb.find("GET", segs, m.foldAll(segs, b2[:0])); e == nil && !strings.ContainsAny(p, " \t") {
				t.Fatalf("Match says %q matches %q but the trie finds nothing", pattern, rawURL)
			}
		}
	})
}

// FuzzNormalizeURL checks that normalisation never panics and is
// idempotent.
func FuzzNormalizeURL(f *testing.F) {
	for _, s := range []string{"/a//b/../c/", "HTTP://Ex.com:80/A?b=1&a=2#x", "/a%2Fb", "", "?", "//host", "/%zz", "mailto:x"} {
		f.Add(s, false)
	}
	f.Fuzz(func(t *testing.T, raw string, caseSensitive bool) {
		cfg := DefaultRouteMatchingConfig()
		cfg.CaseSensitive = caseSensitive
		m := NewMatcher(cfg)
		once := m.NormalizeURL(raw)
		if twice := m.NormalizeURL(once); twice != once {
			t.Fatalf("not idempotent: %q -> %q -> %q", raw, once, twice)
		}
	})
}
