package mock

import (
	"fmt"
	"log/slog"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/acme/app/internal/suggest"
)

// lookup is the outcome of routing one request.
type lookup struct {
	e    *entry
	pass bool // not intercepted: disabled, filtered or outside BaseURL
	path string
	segs []string
	buf  [16]string
	fbuf [16]string
}

// route finds the route for a request. fullURL renders the URL for the
// include/ignore patterns.
func (ic *Interceptor) route(st *state, method string, u *url.URL, server bool, lk *lookup) {
	if !st.cfg.Enabled {
		lk.pass = true
		return
	}
	if len(st.cfg.IgnorePatterns) > 0 || len(st.cfg.IncludePatterns) > 0 {
		full, p := u.String(), u.Path
		if matchAny(st.cfg.IgnorePatterns, full, p) ||
			(len(st.cfg.IncludePatterns) > 0 && !matchAny(st.cfg.IncludePatterns, full, p)) {
			lk.pass = true
			return
		}
	}
	p := u.EscapedPath()
	if st.baseHost != "" && !server && !strings.EqualFold(u.Host, st.baseHost) {
		lk.pass = true
		return
	}
	if st.basePath != "" && st.basePath != "/" {
		if !hasPathPrefix(p, st.basePath, !st.cfg.RouteMatching.CaseSensitive) {
			lk.pass = true
			return
		}
		p = p[len(st.basePath):]
		if p == "" {
			p = "/"
		}
	}
	p = st.m.stripPrefix(p)
	lk.path = p
	lk.segs = st.m.split(p, lk.buf[:0], false)
	folded := st.m.foldAll(lk.segs, lk.fbuf[:0])
	lk.e = st.t.find(method, lk.segs, folded)
}

func hasPathPrefix(p, prefix string, fold bool) bool {
	if len(p) < len(prefix) {
		return false
	}
	head := p[:len(prefix)]
	if head != prefix && !(fold && strings.EqualFold(head, prefix)) {
		return false
	}
	return len(p) == len(prefix) || p[len(prefix)] == '/'
}

func matchAny(ps []Pattern, full, path string) bool {
	for _, p := range ps {
		if p != nil && (p.MatchString(full) || p.MatchString(path)) {
			return true
		}
	}
	return false
}

// noMatch builds the ROUTE_MATCH_FAILED error with near-miss hints.
func (ic *Interceptor) noMatch(st *state, method, rawURL, path string) *Error {
	closest := closestRoutes(st.t.keys, method+" "+path, 3)
	if st.cfg.Logging.Enabled && st.cfg.Logging.LogRouteMatching {
		ic.log(st, slog.LevelWarn, "no mock matched", "method", method, "url", rawURL, "closest", closest)
	}
	msg := fmt.Sprintf("no mock matches %s %s", method, rawURL)
	if len(st.t.keys) == 0 {
		msg += " (no mocks are registered)"
	}
	return &Error{Code: CodeRouteMatchFailed, Message: msg, Method: method, URL: rawURL, Closest: closest}
}

// Closest returns up to n of keys nearest to want by edit distance, ignoring case, nearest
// first (the suggestions of an unmatched request).
func Closest(keys []string, want string, n int) []string { return closestRoutes(keys, want, n) }

// closestRoutes ranks keys by edit distance to want.
func closestRoutes(keys []string, want string, n int) []string {
	type cand struct {
		k string
		d int
	}
	limit := min(len(keys), 5000)
	cands := make([]cand, 0, limit)
	want = strings.ToLower(want)
	for _, k := range keys[:limit] {
		cands = append(cands, cand{k, EditDistance(strings.ToLower(k), want)})
	}
	sort.SliceStable(cands, func(i, j int) bool { return cands[i].d < cands[j].d })
	out := make([]string, 0, n)
	for _, c := range cands {
		if len(out) == n {
			break
		}
		out = append(out, c.k)
	}
	return out
}

// EditDistance is the Levenshtein distance of a and b, counted in bytes over at most their
// first 128 bytes (enough to rank route keys and suggest field names).
func EditDistance(a, b string) int { return suggest.Distance(a, b) }

// Explain reports which route would answer method and rawURL (absolute or
// a path), without running anything or counting it in the stats.
func (ic *Interceptor) Explain(method, rawURL string) RouteMatchInfo {
	start := time.Now()
	u, err := url.Parse(rawURL)
	if err != nil {
		return RouteMatchInfo{ProcessingTime: time.Since(start)}
	}
	st := ic.state.Load()
	var lk lookup
	ic.route(st, method, u, u.Host == "", &lk)
	info := RouteMatchInfo{Matched: lk.e != nil}
	if lk.e != nil {
		info.MatchedRoute = lk.e.key
		info.ExtractedParams = params(lk.e.segs, lk.segs)
		if info.ExtractedParams == nil {
			info.ExtractedParams = map[string]string{}
		}
		info.Score = score(lk.e.segs, len(lk.segs))
	}
	info.ProcessingTime = time.Since(start)
	return info
}
