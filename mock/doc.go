// Package mock intercepts HTTP requests and answers them from registered mock
// handlers.
//
// One engine has two faces. An [*Interceptor] is an [net/http.RoundTripper]:
// put it in any [net/http.Client] and matched requests are answered in
// process, without a network. It is also an [net/http.Handler]: serve it with
// [net/http.Server] (or [net/http/httptest.NewServer]) and real clients get the
// same mocks, with unmatched requests proxied to a target when network
// fallback is on.
//
// Routes are keys of the form "METHOD /path/:param" (see [Definitions]). They
// are compiled into a segment trie, so lookup cost does not grow with the
// number of routes. When several routes match a URL, the best one wins: from
// the left, a static segment beats a parameter, which beats a wildcard.
//
// Nothing in the package keeps hidden global state: every call to [New]
// returns an independent interceptor, so parallel tests never see each other's
// mocks. [Default] and [DefaultGenerator] exist for convenience only.
//
// Around the handlers the interceptor applies delay, ordered [Middleware],
// default headers, include and ignore patterns, a response cache that can
// persist across restarts, and bounded usage statistics. [ValidateDefinitions]
// checks a definition set, and [Generator] produces realistic fake data. The
// cache keeps only what [CacheConfig] allows (GET and HEAD answered 2xx by
// default) and never answers for a route whose definition changed.
//
// Two subpackages read mocks from files: mock/mockfile reads the YAML or JSON
// mock files of `app mock serve` into [Definitions] and a [Config], and
// mock/wiremock serves WireMock stub mappings as they are.
package mock
