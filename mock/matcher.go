package mock

import (
	"maps"
	"net/url"
	"slices"
	"strings"
)

// Matcher matches URLs against route patterns ("GET /users/:id", "* /files/*").
// It is safe for concurrent use.
type Matcher struct {
	cfg RouteMatchingConfig
	// prefix is cfg.StripPrefix normalised for stripPrefix: a leading
	// slash and no trailing one; "" when there is none to strip.
	prefix string
}

// NewMatcher returns a matcher configured by cfg. Start from
// [DefaultRouteMatchingConfig]; an empty ParameterPrefix means ":".
func NewMatcher(cfg RouteMatchingConfig) *Matcher {
	cfg = cfg.withDefaults()
	pre := strings.TrimSuffix(cfg.StripPrefix, "/")
	if pre != "" && !strings.HasPrefix(pre, "/") {
		pre = "/" + pre
	}
	return &Matcher{cfg: cfg, prefix: pre}
}

// Config returns the matcher's configuration.
func (m *Matcher) Config() RouteMatchingConfig { return m.cfg }

type segKind uint8

const (
	kindStatic segKind = iota
	kindParam
	kindWildcard // one segment
	kindRest     // trailing wildcard: zero or more segments
)

// weight orders segment kinds: static beats parameter beats wildcard.
var weight = [...]int64{kindStatic: 3, kindParam: 2, kindWildcard: 1, kindRest: 1}

type patSeg struct {
	kind segKind
	text string // static text (folded unless case-sensitive) or parameter name
}

// splitRouteKey splits "GET /users/:id" into method and path. A pattern
// without a space has no method ("").
func splitRouteKey(key string) (method, path string) {
	key = strings.TrimSpace(key)
	if i := strings.IndexAny(key, " \t"); i >= 0 {
		return key[:i], strings.TrimSpace(key[i+1:])
	}
	if strings.HasPrefix(key, "/") || key == "" {
		return "", key
	}
	return key, ""
}

// compilePath turns a path pattern into segments.
func (m *Matcher) compilePath(pattern string) []patSeg {
	var buf [16]string
	raw := m.split(pattern, buf[:0], false)
	segs := make([]patSeg, 0, len(raw))
	prefix := m.cfg.ParameterPrefix
	for i, s := range raw {
		switch {
		case m.cfg.SupportWildcards && s == "*":
			if i == len(raw)-1 {
				segs = append(segs, patSeg{kind: kindRest, text: "*"})
			} else {
				segs = append(segs, patSeg{kind: kindWildcard, text: "*"})
			}
		case prefix == "{" && len(s) > 2 && s[0] == '{' && s[len(s)-1] == '}':
			segs = append(segs, patSeg{kind: kindParam, text: s[1 : len(s)-1]})
		case prefix != "{" && len(s) > len(prefix) && strings.HasPrefix(s, prefix):
			segs = append(segs, patSeg{kind: kindParam, text: s[len(prefix):]})
		default:
			segs = append(segs, patSeg{kind: kindStatic, text: m.fold(s)})
		}
	}
	return segs
}

// fold lower-cases s unless matching is case-sensitive. It does not
// allocate when s has no upper-case letter.
func (m *Matcher) fold(s string) string {
	if m.cfg.CaseSensitive {
		return s
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x80 || ('A' <= c && c <= 'Z') {
			return strings.ToLower(s)
		}
	}
	return s
}

// stripPrefix removes the configured prefix when the path starts with it
// on a segment boundary.
func (m *Matcher) stripPrefix(p string) string {
	pre := m.prefix
	if pre == "" {
		return p
	}
	if len(p) < len(pre) {
		return p
	}
	head := p[:len(pre)]
	if head != pre && (m.cfg.CaseSensitive || !strings.EqualFold(head, pre)) {
		return p
	}
	rest := p[len(pre):]
	if rest == "" {
		return "/"
	}
	if rest[0] != '/' {
		return p
	}
	return rest
}

// split cuts an escaped path into segments, appending to buf. With
// normalisation on (or force), empty and "." segments are dropped, ".."
// removes the previous segment and escapes are decoded. A trailing slash
// gives a final empty segment only under ExactMatch.
func (m *Matcher) split(p string, buf []string, force bool) []string {
	normalize := m.cfg.NormalizeURLs || force
	if i := strings.IndexAny(p, "?#"); i >= 0 {
		p = p[:i]
	}
	p = strings.TrimPrefix(p, "/")
	if p == "" {
		return buf
	}
	trailing := strings.HasSuffix(p, "/")
	for p != "" {
		var s string
		if i := strings.IndexByte(p, '/'); i >= 0 {
			s, p = p[:i], p[i+1:]
		} else {
			s, p = p, ""
		}
		if normalize {
			if strings.IndexByte(s, '%') >= 0 {
				if d, err := url.PathUnescape(s); err == nil {
					s = d
				}
			}
			switch s {
			case "", ".":
				continue
			case "..":
				if len(buf) > 0 {
					buf = buf[:len(buf)-1]
				}
				continue
			}
		}
		buf = append(buf, s)
	}
	if trailing && m.cfg.ExactMatch {
		buf = append(buf, "")
	}
	return buf
}

// matchSegs matches compiled pattern segments against URL segments. folded
// holds the URL segments as the static segments are stored.
func matchSegs(pat []patSeg, segs, folded []string) bool {
	i := 0
	for _, p := range pat {
		switch p.kind {
		case kindRest:
			return true
		case kindStatic:
			if i >= len(segs) || folded[i] != p.text {
				return false
			}
		case kindParam, kindWildcard:
			if i >= len(segs) || segs[i] == "" {
				return false
			}
		}
		i++
	}
	return i == len(segs)
}

// params extracts the parameters of a pattern that matched segs.
func params(pat []patSeg, segs []string) map[string]string {
	var out map[string]string
	for i, p := range pat {
		switch p.kind {
		case kindParam:
			if out == nil {
				out = make(map[string]string, 2)
			}
			out[p.text] = segs[i]
		case kindRest:
			if out == nil {
				out = make(map[string]string, 1)
			}
			if i < len(segs) {
				out["*"] = strings.Join(segs[i:], "/")
			} else {
				out["*"] = ""
			}
			return out
		}
	}
	return out
}

// maxScored is the number of leading segments that count in a score.
const maxScored = 30

// score ranks a match of pat against n URL segments: segment by segment
// from the left, static (3) beats parameter (2) beats wildcard (1); a
// pattern without a trailing wildcard wins a tie.
func score(pat []patSeg, n int) int64 {
	var s int64
	rest := false
	pos := 0
	for _, p := range pat {
		if pos >= n || pos >= maxScored {
			if p.kind == kindRest {
				rest = true
			}
			break
		}
		s = s*4 + weight[p.kind]
		pos++
		if p.kind == kindRest {
			rest = true
			break
		}
	}
	for ; pos < min(n, maxScored); pos++ {
		s *= 4
	}
	s *= 2
	if !rest {
		s++
	}
	return s
}

// foldAll returns segs folded for static comparison; it returns segs
// itself when nothing changes.
func (m *Matcher) foldAll(segs []string, buf []string) []string {
	if m.cfg.CaseSensitive {
		return segs
	}
	for i, s := range segs {
		if f := m.fold(s); f != s {
			buf = append(buf[:0], segs[:i]...)
			buf = append(buf, f)
			for _, t := range segs[i+1:] {
				buf = append(buf, m.fold(t))
			}
			return buf
		}
	}
	return segs
}

// urlPath returns the escaped path of a URL or path string.
func urlPath(raw string) string {
	if strings.HasPrefix(raw, "/") {
		return raw
	}
	u, err := url.Parse(raw)
	if err != nil {
		if i := strings.Index(raw, "://"); i >= 0 {
			raw = raw[i+3:]
			if j := strings.IndexByte(raw, '/'); j >= 0 {
				return raw[j:]
			}
			return "/"
		}
		return raw
	}
	return u.EscapedPath()
}

// Match matches url against pattern for method. The pattern is a path
// pattern ("/users/:id") or a route key ("GET /users/:id"); a route key's
// method must equal method unless it is "*". The URL may be absolute or a
// path; its query is ignored.
func (m *Matcher) Match(pattern, rawURL, method string) RouteMatchResult {
	pm, pp := splitRouteKey(pattern)
	if pm != "" && pm != "*" && method != "" && !strings.EqualFold(pm, method) {
		return RouteMatchResult{}
	}
	pat := m.compilePath(pp)
	var b1, b2 [16]string
	segs := m.split(m.stripPrefix(urlPath(rawURL)), b1[:0], false)
	folded := m.foldAll(segs, b2[:0])
	if !matchSegs(pat, segs, folded) {
		return RouteMatchResult{}
	}
	p := params(pat, segs)
	if p == nil {
		p = map[string]string{}
	}
	return RouteMatchResult{Matches: true, Params: p, Score: score(pat, len(segs))}
}

// ExtractParams returns the path parameters of url under pattern, or an
// empty map when it does not match.
func (m *Matcher) ExtractParams(pattern, rawURL string) map[string]string {
	r := m.Match(pattern, rawURL, "")
	if r.Params == nil {
		return map[string]string{}
	}
	return r.Params
}

// NormalizeURL returns the canonical form of a URL or path, the one the
// cache keys on: scheme and host lower-cased, default ports dropped,
// duplicate slashes collapsed, "." and ".." resolved, escapes decoded and
// re-encoded, the trailing slash dropped (kept under ExactMatch), the path
// lower-cased unless matching is case-sensitive, the query sorted by key
// and the fragment dropped. A string that does not parse as a URL is
// returned unchanged.
func (m *Matcher) NormalizeURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Opaque != "" {
		return raw
	}
	var b strings.Builder
	if u.Scheme != "" || u.Host != "" {
		scheme := strings.ToLower(u.Scheme)
		host := strings.ToLower(u.Host)
		if (scheme == "http" && strings.HasSuffix(host, ":80")) || (scheme == "https" && strings.HasSuffix(host, ":443")) {
			host = host[:strings.LastIndexByte(host, ':')]
		}
		if scheme != "" {
			b.WriteString(scheme)
			b.WriteString(":")
		}
		b.WriteString("//")
		if u.User != nil {
			b.WriteString(u.User.String())
			b.WriteString("@")
		}
		b.WriteString(host)
	}
	var buf [16]string
	segs := m.split(u.EscapedPath(), buf[:0], true)
	var p strings.Builder
	for _, s := range segs {
		p.WriteString("/")
		p.WriteString(url.PathEscape(s))
	}
	if len(segs) == 0 {
		p.WriteString("/")
	}
	b.WriteString(m.fold(p.String()))
	if u.RawQuery != "" {
		q, _ := url.ParseQuery(u.RawQuery)
		if enc := q.Encode(); enc != "" {
			b.WriteString("?")
			b.WriteString(enc)
		}
	}
	return b.String()
}

// entry is one compiled route.
type entry struct {
	key     string
	method  string // upper-case, "*" for any
	segs    []patSeg
	handler Handler
}

// node is a segment trie node.
type node struct {
	static map[string]*node
	param  *node
	wild   *node
	rest   *entry // route ending in a trailing wildcard at this node
	leaf   *entry
}

func (n *node) insert(e *entry) {
	cur := n
	for _, s := range e.segs {
		switch s.kind {
		case kindStatic:
			if cur.static == nil {
				cur.static = make(map[string]*node)
			}
			nx := cur.static[s.text]
			if nx == nil {
				nx = &node{}
				cur.static[s.text] = nx
			}
			cur = nx
		case kindParam:
			if cur.param == nil {
				cur.param = &node{}
			}
			cur = cur.param
		case kindWildcard:
			if cur.wild == nil {
				cur.wild = &node{}
			}
			cur = cur.wild
		case kindRest:
			if cur.rest == nil {
				cur.rest = e
			}
			return
		}
	}
	if cur.leaf == nil {
		cur.leaf = e
	}
}

// lookup finds the best route for segs: depth first, static before
// parameter before wildcard before trailing wildcard, which is the order
// of [score].
func (n *node) lookup(segs, folded []string, i int) *entry {
	if i == len(segs) {
		if n.leaf != nil {
			return n.leaf
		}
		return n.rest
	}
	if n.static != nil {
		if c := n.static[folded[i]]; c != nil {
			if e := c.lookup(segs, folded, i+1); e != nil {
				return e
			}
		}
	}
	if segs[i] != "" {
		if n.param != nil {
			if e := n.param.lookup(segs, folded, i+1); e != nil {
				return e
			}
		}
		if n.wild != nil {
			if e := n.wild.lookup(segs, folded, i+1); e != nil {
				return e
			}
		}
	}
	return n.rest
}

// table is an immutable compiled definition set.
type table struct {
	methods map[string]*node
	any     *node
	entries map[string]*entry
	keys    []string
}

// compileRoutes compiles every definition into an entry, in route-key order.
func compileRoutes(m *Matcher, defs map[string]Handler) []*entry {
	keys := slices.Sorted(maps.Keys(defs))
	out := make([]*entry, len(keys))
	for i, k := range keys {
		method, p := splitRouteKey(k)
		method = strings.ToUpper(method)
		if method == "" {
			method = "*"
		}
		out[i] = &entry{key: k, method: method, segs: m.compilePath(p), handler: defs[k]}
	}
	return out
}

// newTable indexes compiled entries (from compileRoutes) by method and path.
func newTable(entries []*entry) *table {
	t := &table{methods: make(map[string]*node), entries: make(map[string]*entry, len(entries))}
	t.keys = make([]string, len(entries))
	for i, e := range entries {
		t.keys[i] = e.key
		t.entries[e.key] = e
		root := t.any
		if e.method == "*" {
			if root == nil {
				t.any = &node{}
				root = t.any
			}
		} else {
			root = t.methods[e.method]
			if root == nil {
				root = &node{}
				t.methods[e.method] = root
			}
		}
		root.insert(e)
	}
	return t
}

// find returns the best route for method and the URL segments, preferring
// a route of the method over an any-method route of equal score.
func (t *table) find(method string, segs, folded []string) *entry {
	var e *entry
	if root := t.methods[method]; root != nil {
		e = root.lookup(segs, folded, 0)
	}
	if t.any != nil {
		if a := t.any.lookup(segs, folded, 0); a != nil {
			if e == nil || score(a.segs, len(segs)) > score(e.segs, len(segs)) {
				e = a
			}
		}
	}
	return e
}

// definitions returns the handlers by route key.
func (t *table) definitions() Definitions {
	d := make(Definitions, len(t.entries))
	for k, e := range t.entries {
		d[k] = e.handler
	}
	return d
}
