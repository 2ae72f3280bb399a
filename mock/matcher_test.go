package mock

import (
	"maps"
	"testing"
)

// Ensure every RouteMatchingConfig option changes matching as documented.
func TestMatcher_Match(t *testing.T) {
	t.Parallel()
	def := DefaultRouteMatchingConfig()
	with := func(f func(*RouteMatchingConfig)) RouteMatchingConfig { c := def; f(&c); return c }
	tests := []struct {
		name       string
		cfg        RouteMatchingConfig
		pattern    string
		url        string
		method     string
		wantMatch  bool
		wantParams map[string]string
	}{
		{"Static", def, "/users", "/users", "GET", true, map[string]string{}},
		{"StaticMiss", def, "/users", "/user", "GET", false, nil},
		{"Param", def, "/users/:id", "/users/42", "GET", true, map[string]string{"id": "42"}},
		{"TwoParams", def, "/users/:id/posts/:post", "/users/1/posts/2", "", true, map[string]string{"id": "1", "post": "2"}},
		{"ParamNeedsSegment", def, "/users/:id", "/users", "GET", false, nil},
		{"AbsoluteURL", def, "/users/:id", "https://api.example.com/users/7?x=1#f", "GET", true, map[string]string{"id": "7"}},
		{"RouteKeyMethod", def, "GET /users/:id", "/users/7", "GET", true, map[string]string{"id": "7"}},
		{"RouteKeyWrongMethod", def, "POST /users/:id", "/users/7", "GET", false, nil},
		{"AnyMethod", def, "* /users/:id", "/users/7", "DELETE", true, map[string]string{"id": "7"}},
		{"CaseInsensitiveDefault", def, "/Users/:id", "/USERS/Ab", "GET", true, map[string]string{"id": "Ab"}},
		{"CaseSensitive", with(func(c *RouteMatchingConfig) { c.CaseSensitive = true }), "/Users", "/users", "GET", false, nil},
		{"CaseSensitiveSame", with(func(c *RouteMatchingConfig) { c.CaseSensitive = true }), "/Users", "/Users", "GET", true, map[string]string{}},
		{"TrailingSlashIgnored", def, "/users", "/users/", "GET", true, map[string]string{}},
		{"ExactMatchTrailingSlash", with(func(c *RouteMatchingConfig) { c.ExactMatch = true }), "/users", "/users/", "GET", false, nil},
		{"ExactMatchSame", with(func(c *RouteMatchingConfig) { c.ExactMatch = true }), "/users/", "/users/", "GET", true, map[string]string{}},
		{"StripPrefix", with(func(c *RouteMatchingConfig) { c.StripPrefix = "/api/v1" }), "/users/:id", "/api/v1/users/3", "GET", true, map[string]string{"id": "3"}},
		{"StripPrefixBoundary", with(func(c *RouteMatchingConfig) { c.StripPrefix = "/api" }), "/users", "/apiusers", "GET", false, nil},
		{"StripPrefixNoSlashes", with(func(c *RouteMatchingConfig) { c.StripPrefix = "api/v1/" }), "/users/:id", "/api/v1/users/3", "GET", true, map[string]string{"id": "3"}},
		{"StripPrefixFolded", with(func(c *RouteMatchingConfig) { c.StripPrefix = "/api" }), "/users", "/API/users", "GET", true, map[string]string{}},
		{"StripPrefixCaseSensitive", with(func(c *RouteMatchingConfig) { c.StripPrefix = "/api"; c.CaseSensitive = true }), "/users", "/API/users", "GET", false, nil},
		{"StripPrefixWhole", with(func(c *RouteMatchingConfig) { c.StripPrefix = "/api" }), "/", "/api", "GET", true, map[string]string{}},
		{"StripPrefixSlashOnly", with(func(c *RouteMatchingConfig) { c.StripPrefix = "/" }), "/users", "/users", "GET", true, map[string]string{}},
		{"NormalizeDoubleSlash", def, "/a/b", "//a///b", "GET", true, map[string]string{}},
		{"NormalizeDots", def, "/a/c", "/a/b/../c/.", "GET", true, map[string]string{}},
		{"NormalizeEscapes", def, "/files/:name", "/files/a%20b", "GET", true, map[string]string{"name": "a b"}},
		{"NoNormalize", with(func(c *RouteMatchingConfig) { c.NormalizeURLs = false }), "/a/b", "/a//b", "GET", false, nil},
		{"NoNormalizeEscapesKept", with(func(c *RouteMatchingConfig) { c.NormalizeURLs = false }), "/files/:name", "/files/a%20b", "GET", true, map[string]string{"name": "a%20b"}},
		{"ParameterPrefixDollar", with(func(c *RouteMatchingConfig) { c.ParameterPrefix = "$" }), "/users/$id", "/users/9", "GET", true, map[string]string{"id": "9"}},
		{"ParameterPrefixDollarColonIsStatic", with(func(c *RouteMatchingConfig) { c.ParameterPrefix = "$" }), "/users/:id", "/users/9", "GET", false, nil},
		{"ParameterPrefixBrace", with(func(c *RouteMatchingConfig) { c.ParameterPrefix = "{" }), "/users/{id}", "/users/9", "GET", true, map[string]string{"id": "9"}},
		{"WildcardMiddle", def, "/files/*/raw", "/files/x/raw", "GET", true, map[string]string{}},
		{"WildcardMiddleOneSegment", def, "/files/*/raw", "/files/x/y/raw", "GET", false, nil},
		{"WildcardTrailing", def, "/files/*", "/files/a/b/c", "GET", true, map[string]string{"*": "a/b/c"}},
		{"WildcardTrailingZero", def, "/files/*", "/files", "GET", true, map[string]string{"*": ""}},
		{"WildcardsOff", with(func(c *RouteMatchingConfig) { c.SupportWildcards = false }), "/files/*", "/files/a", "GET", false, nil},
		{"WildcardsOffLiteral", with(func(c *RouteMatchingConfig) { c.SupportWildcards = false }), "/files/*", "/files/*", "GET", true, map[string]string{}},
		{"Root", def, "/", "/", "GET", true, map[string]string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := NewMatcher(tt.cfg).Match(tt.pattern, tt.url, tt.method)
			if got.Matches != tt.wantMatch {
				t.Fatalf("Match(%q, %q, %q).Matches=%v, want %v", tt.pattern, tt.url, tt.method, got.Matches, tt.wantMatch)
			}
			if tt.wantMatch && !maps.Equal(got.Params, tt.wantParams) {
				t.Fatalf("params=%v, want %v", got.Params, tt.wantParams)
			}
			if tt.wantMatch && got.Score <= 0 {
				t.Fatalf("score=%d, want > 0", got.Score)
			}
		})
	}
}

// Ensure scores rank static over parameter over wildcard, from the left.
func TestMatcher_Score(t *testing.T) {
	t.Parallel()
	m := NewMatcher(DefaultRouteMatchingConfig())
	tests := []struct {
		name          string
		better, worse string
		url           string
	}{
		{"StaticBeatsParam", "/users/search", "/users/:id", "/users/search"},
		{"ParamBeatsWildcard", "/users/:id", "/users/*", "/users/search"},
		{"ParamBeatsTrailingWildcard", "/users/:id", "/users/*", "/users/1"},
		{"MiddleWildcardBeatsTrailing", "/files/*/raw", "/files/*", "/files/a/raw"},
		{"LeftmostDecides", "/a/:x/:y", "/:x/b/c", "/a/b/c"},
		{"NoWildcardBeatsZeroWildcard", "/files", "/files/*", "/files"},
		{"DeeperStaticPrefixWins", "/api/*", "/*", "/api/x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b, w := m.Match(tt.better, tt.url, "GET"), m.Match(tt.worse, tt.url, "GET")
			if !b.Matches || !w.Matches {
				t.Fatalf("both must match: %v %v", b.Matches, w.Matches)
			}
			if b.Score <= w.Score {
				t.Fatalf("score(%q)=%d, want > score(%q)=%d", tt.better, b.Score, tt.worse, w.Score)
			}
		})
	}
}

// Ensure the trie picks the same route as scoring every pattern.
func TestTable_BestWins(t *testing.T) {
	t.Parallel()
	m := NewMatcher(DefaultRouteMatchingConfig())
	routes := []string{"GET /users/search", "GET /users/:id", "GET /users/*", "GET /*", "GET /users/:id/posts",
		"GET /files/*/raw", "GET /files/*", "* /health", "GET /a/:x/:y", "GET /:x/b/c"}
	defs := Definitions{}
	for _, r := range routes {
		defs[r] = JSON(200, r)
	}
	tb := newTable(compileRoutes(m, defs))
	urls := []string{"/users/search", "/users/42", "/users/42/posts", "/users/1/2", "/x", "/files/a/raw",
		"/files/a/b", "/health", "/a/b/c", "/z/b/c", "/"}
	for _, u := range urls {
		var bestKey string
		var best int64 = -1
		for _, r := range routes {
			if res := m.Match(r, u, "GET"); res.Matches && res.Score > best {
				best, bestKey = res.Score, r
			}
		}
		var buf, fbuf [16]string
		segs := m.split(u, buf[:0], false)
		e := tb.find("GET", segs, m.foldAll(segs, fbuf[:0]))
		got := ""
		if e != nil {
			got = e.key
		}
		if got != bestKey {
			t.Errorf("find(%q)=%q, want the best-scored %q", u, got, bestKey)
		}
	}
}

// Ensure NormalizeURL yields the documented canonical form.
func TestMatcher_NormalizeURL(t *testing.T) {
	t.Parallel()
	def := NewMatcher(DefaultRouteMatchingConfig())
	exact := NewMatcher(RouteMatchingConfig{ExactMatch: true, CaseSensitive: true})
	tests := []struct {
		name string
		m    *Matcher
		in   string
		want string
	}{
		{"Path", def, "/Users//42/", "/users/42"},
		{"Dots", def, "/a/./b/../c", "/a/c"},
		{"SortedQuery", def, "/a?b=2&a=1", "/a?a=1&b=2"},
		{"Fragment", def, "/a#top", "/a"},
		{"HostAndPort", def, "HTTP://Example.COM:80/a", "http://example.com/a"},
		{"HTTPSPort", def, "https://example.com:443/a/", "https://example.com/a"},
		{"OtherPortKept", def, "http://example.com:8080/", "http://example.com:8080/"},
		{"Escapes", def, "/a%20b/c%2Fd", "/a%20b/c%2fd"},
		{"ExactKeepsSlashAndCase", exact, "/Users/", "/Users/"},
		{"Empty", def, "", "/"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := tt.m.NormalizeURL(tt.in); got != tt.want {
				t.Fatalf("NormalizeURL(%q)=%q, want %q", tt.in, got, tt.want)
			}
			if got := tt.m.NormalizeURL(tt.want); got != tt.want {
				t.Fatalf("NormalizeURL is not idempotent: %q -> %q", tt.want, got)
			}
		})
	}
}

// Ensure ExtractParams returns the parameters, or an empty map on a miss.
func TestMatcher_ExtractParams(t *testing.T) {
	t.Parallel()
	m := NewMatcher(DefaultRouteMatchingConfig())
	if got, want := m.ExtractParams("/orgs/:org/repos/:repo", "/orgs/acme/repos/app"), map[string]string{"org": "acme", "repo": "app"}; !maps.Equal(got, want) {
		t.Fatalf("params=%v, want %v", got, want)
	}
	if got := m.ExtractParams("/orgs/:org", "/users/1"); got == nil || len(got) != 0 {
		t.Fatalf("params=%v, want empty non-nil map", got)
	}
}
