package wiremock

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
)

type urlKind int

const (
	urlAny       urlKind = iota // no URL field: every URL
	urlExact                    // url: path and query, exactly
	urlPathExact                // urlPath: the path, exactly
	urlRegex                    // urlPattern: path and query
	urlPathRegex                // urlPathPattern: the path
	urlTemplate                 // urlPathTemplate: /contacts/{id}
)

type urlMatch struct {
	kind urlKind
	s    string
	re   *regexp.Regexp
}

type tmplSeg struct {
	lit, param string
}

type pathTemplate struct{ segs []tmplSeg }

// match reports whether path p fits the template, calling param (when not nil) with each
// path parameter. It walks p in place: a request costs no allocation here.
func (t *pathTemplate) match(p string, param func(name, value string)) bool {
	rest := strings.TrimPrefix(p, "/")
	for i, sg := range t.segs {
		part, tail, found := strings.Cut(rest, "/")
		if found == (i == len(t.segs)-1) { // too few segments, or too many
			return false
		}
		rest = tail
		if sg.param == "" {
			if part != sg.lit {
				return false
			}
			continue
		}
		if part == "" {
			return false
		}
		if param != nil {
			param(sg.param, part)
		}
	}
	return true
}

// stringMatcher is WireMock's string value pattern, for query, header, cookie and path values.
type stringMatcher struct {
	op     string // equalTo, contains, matches, doesNotMatch, absent
	s      string
	re     *regexp.Regexp
	fold   bool // caseInsensitive, for equalTo only (WireMock drops it beside the others)
	absent bool
}

// matches reports whether the values (nil: not present) fit, as WireMock decides: absent
// checks presence; a value that is not there matches doesNotMatch only (it does not match the
// pattern); the others match when any value fits (doesNotMatch too: when any value does not
// match).
func (m *stringMatcher) matches(vals []string, present bool) bool {
	if m.op == "absent" {
		return present != m.absent
	}
	if !present {
		return m.op == "doesNotMatch"
	}
	for _, v := range vals {
		if m.one(v) {
			return true
		}
	}
	return false
}

func (m *stringMatcher) one(v string) bool {
	switch m.op {
	case "equalTo":
		if m.fold {
			return strings.EqualFold(v, m.s)
		}
		return v == m.s
	case "contains": // caseInsensitive is equalTo's only: WireMock drops it here
		return strings.Contains(v, m.s)
	case "matches":
		return m.re.MatchString(v)
	case "doesNotMatch":
		return !m.re.MatchString(v)
	}
	return false
}

type namedMatcher struct {
	name string
	m    *stringMatcher
}

// bodyMatcher is one bodyPatterns entry.
type bodyMatcher struct {
	op          string
	s           string
	re          *regexp.Regexp
	fold        bool
	json        any
	ignoreOrder bool
	ignoreExtra bool
	path        []pathStep
}

// matches checks the body; parsed caches the body's JSON across matchers.
func (m *bodyMatcher) matches(body []byte, parsed *jsonBody) bool {
	switch m.op {
	case "equalTo":
		if m.fold {
			return strings.EqualFold(string(body), m.s)
		}
		return string(body) == m.s
	case "contains": // caseInsensitive is equalTo's only: WireMock drops it here
		return bytes.Contains(body, []byte(m.s))
	case "matches":
		return m.re.Match(body)
	case "doesNotMatch":
		return !m.re.Match(body)
	case "equalToJson":
		v, ok := parsed.get(body)
		return ok && jsonEqual(m.json, v, m.ignoreOrder, m.ignoreExtra)
	case "matchesJsonPath":
		v, ok := parsed.get(body)
		return ok && pathFound(m.path, v)
	}
	return false
}

// jsonBody parses the request body as JSON once, on first need.
type jsonBody struct {
	done bool
	ok   bool
	v    any
}

func (j *jsonBody) get(body []byte) (any, bool) {
	if !j.done {
		j.done = true
		v, err := decodeJSON(body)
		j.v, j.ok = v, err == nil
	}
	return j.v, j.ok
}

// decodeJSON decodes one JSON value as json.Unmarshal does, but with numbers kept as
// json.Number, so that equalToJson compares them exactly.
func decodeJSON(b []byte) (any, error) {
	if !json.Valid(b) {
		var v any
		return nil, json.Unmarshal(b, &v) // for its error
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	err := d.Decode(&v)
	return v, err
}

// maxJSONSteps bounds the work of one equalToJson comparison: every pair of values compared
// is a step, and so is every pair tried while assigning expected array items to request items
// under ignoreArrayOrder. A comparison that needs more does not match. Without
// ignoreArrayOrder a comparison takes at most one step per value of the expected JSON, so
// the bound matters only to unordered arrays of objects or arrays, where a mapping and a body
// of a few thousand items each could otherwise ask for millions of comparisons per request.
const maxJSONSteps = 1 << 21

// maxMemo bounds the pairs an unordered array comparison remembers (one byte each).
const maxMemo = 1 << 16

// jsonEqual compares JSON values: numbers by value, objects by keys (actual may have more
// with ignoreExtra), arrays in order (any order with ignoreOrder; with ignoreExtra, extra
// items after the expected ones, or anywhere with ignoreOrder too). It gives up, false, past
// maxJSONSteps.
func jsonEqual(want, got any, ignoreOrder, ignoreExtra bool) bool {
	c := &jsonCmp{ignoreOrder: ignoreOrder, ignoreExtra: ignoreExtra, steps: maxJSONSteps}
	return c.equal(want, got)
}

// jsonCmp is one equalToJson comparison, with the steps it has left.
type jsonCmp struct {
	ignoreOrder, ignoreExtra bool
	steps                    int
}

// spend takes one step; false when none is left.
func (c *jsonCmp) spend() bool {
	if c.steps <= 0 {
		return false
	}
	c.steps--
	return true
}

func (c *jsonCmp) equal(want, got any) bool {
	if !c.spend() {
		return false
	}
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok || (!c.ignoreExtra && len(g) != len(w)) {
			return false
		}
		for k, wv := range w {
			gv, ok := g[k]
			if !ok || !c.equal(wv, gv) {
				return false
			}
		}
		return true
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) < len(w) || (!c.ignoreExtra && len(g) != len(w)) {
			return false
		}
		if !c.ignoreOrder {
			// Position by position, as WireMock compares them: ignoreExtra lets the request
			// have more items after the last expected one, never between them.
			for i, wv := range w {
				if !c.equal(wv, g[i]) {
					return false
				}
			}
			return true
		}
		return c.unordered(w, g)
	default:
		wk, _ := scalarKey(want)
		gk, ok := scalarKey(got)
		return ok && wk == gk
	}
}

// unordered reports whether each item of want can be given a distinct item of got that it
// equals (len(got) >= len(want); equal lengths unless ignoreExtra). A first-fit choice is
// not enough once ignoreExtra makes equality one-sided: [{"a":1},{"a":1,"b":2}] fits
// [{"a":1,"b":2},{"a":1}] only if {"a":1} does not take the first item. Scalars equal only
// equal scalars, so they are paired by counting; objects and arrays by a maximum bipartite
// matching (augmenting paths), each pair compared once.
func (c *jsonCmp) unordered(want, got []any) bool {
	if c.steps < len(got) {
		return false
	}
	c.steps -= len(got)
	var wc, gc []any // objects and arrays
	counts := map[string]int{}
	for _, v := range got {
		if k, ok := scalarKey(v); ok {
			counts[k]++
		} else {
			gc = append(gc, v)
		}
	}
	for _, v := range want {
		if !c.spend() {
			return false
		}
		k, ok := scalarKey(v)
		if !ok {
			wc = append(wc, v)
			continue
		}
		if counts[k] == 0 {
			return false
		}
		counts[k]--
	}
	if len(wc) > len(gc) {
		return false
	}
	if len(wc) == 0 {
		return true
	}
	return c.assign(wc, gc)
}

// assign finds a distinct item of got for every item of want (Kuhn's augmenting paths, walked
// without recursion, over a compatibility matrix filled as pairs are first needed).
func (c *jsonCmp) assign(want, got []any) bool {
	n, m := len(want), len(got)
	// Each pair is compared once when the matrix is small; a large one is not kept (its
	// pairs are compared again when needed, each time counted against the steps), so that
	// memory stays small whatever the arrays' sizes.
	const unknown, yes, no = 0, 1, 2
	var memo []int8
	if n*m <= maxMemo {
		memo = make([]int8, n*m)
	}
	fits := func(i, j int) bool {
		if memo == nil {
			return c.equal(want[i], got[j])
		}
		v := memo[i*m+j]
		if v == unknown {
			v = no
			if c.equal(want[i], got[j]) {
				v = yes
			}
			memo[i*m+j] = v
		}
		return v == yes
	}
	owner := make([]int, m) // the want item holding got[j], or -1
	for j := range owner {
		owner[j] = -1
	}
	seen := make([]int, m) // the search (i+1) that visited got[j]
	// A frame tries the items of got from start on, wrapping round; cur is the one it tries.
	// The first frame of a search starts at its own index, so items already in the same
	// order pair at the first try.
	type frame struct{ i, start, tried, cur int }
	var stack []frame
	for i := range want {
		stack = append(stack[:0], frame{i: i, start: i % m})
		found := false
		for len(stack) > 0 && !found {
			if !c.spend() {
				return false
			}
			top := &stack[len(stack)-1]
			if top.tried == m {
				stack = stack[:len(stack)-1]
				continue
			}
			j := (top.start + top.tried) % m
			top.tried++
			top.cur = j
			if seen[j] == i+1 || !fits(top.i, j) {
				continue
			}
			seen[j] = i + 1
			if owner[j] >= 0 {
				stack = append(stack, frame{i: owner[j]})
				continue
			}
			// A free item: every want item on the path takes the item it was trying.
			for _, f := range stack {
				owner[f.cur] = f.i
			}
			found = true
		}
		if !found {
			return false
		}
	}
	return true
}

// scalarKey is a JSON scalar as a comparable key (numbers by value); ok is false for an
// object or an array.
func scalarKey(v any) (string, bool) {
	switch x := v.(type) {
	case nil:
		return "null", true
	case bool:
		if x {
			return "true", true
		}
		return "false", true
	case string:
		return "s" + x, true
	case json.Number:
		return "n" + numberKey(string(x)), true
	case float64: // from a caller that decoded without UseNumber
		return "n" + numberKey(strconv.FormatFloat(x, 'g', -1, 64)), true
	}
	return "", false
}

// numberKey is a JSON number's exact value as a key, as WireMock compares numbers (as
// decimals, not as float64): the significant digits and the power of ten, so 1, 1.0, 1e0 and
// 100e-2 give one key, and 9007199254740993 another than 9007199254740992. Zero is zero
// whatever its exponent; another number with an exponent of more than 15 digits keys by its
// text.
func numberKey(s string) string {
	raw := s
	sign := ""
	if strings.HasPrefix(s, "-") {
		sign, s = "-", s[1:]
	}
	mant, exp, hasExp := strings.Cut(strings.ToLower(s), "e")
	whole, frac, _ := strings.Cut(mant, ".")
	digits := strings.TrimLeft(whole+frac, "0")
	if digits == "" {
		return "0" // zero, whatever its sign and exponent
	}
	e := int64(0)
	if hasExp {
		exp = strings.TrimPrefix(exp, "+")
		if len(strings.TrimLeft(strings.TrimPrefix(exp, "-"), "0")) > 15 {
			return "text:" + raw
		}
		n, err := strconv.ParseInt(exp, 10, 64)
		if err != nil {
			return "text:" + raw
		}
		e = n
	}
	e -= int64(len(frac))
	trimmed := strings.TrimRight(digits, "0")
	e += int64(len(digits) - len(trimmed))
	return sign + trimmed + "e" + strconv.FormatInt(e, 10)
}

// pathStep is one step of a plain JSON path: a member name or an array index.
type pathStep struct {
	name  string
	index int // -1 for a name
}

// parseJSONPath reads $.a.b[0]['c'] (plain paths only: no filters, wildcards or slices).
func parseJSONPath(s string) ([]pathStep, error) {
	if !strings.HasPrefix(s, "$") {
		return nil, fmt.Errorf("%q: a JSON path starts with $", s)
	}
	rest := s[1:]
	var out []pathStep
	for rest != "" {
		switch {
		case strings.HasPrefix(rest, ".."):
			return nil, fmt.Errorf("%q: deep scan (..) is not supported, only plain paths", s)
		case rest[0] == '.':
			rest = rest[1:]
			i := strings.IndexAny(rest, ".[")
			if i < 0 {
				i = len(rest)
			}
			name := rest[:i]
			if name == "" || name == "*" {
				return nil, fmt.Errorf("%q: only plain paths ($.a.b[0]) are supported", s)
			}
			out = append(out, pathStep{name: name, index: -1})
			rest = rest[i:]
		case rest[0] == '[':
			end := strings.IndexByte(rest, ']')
			if end < 0 {
				return nil, fmt.Errorf("%q: unclosed [", s)
			}
			inner := rest[1:end]
			rest = rest[end+1:]
			if len(inner) >= 2 && (inner[0] == '\'' || inner[0] == '"') && inner[len(inner)-1] == inner[0] {
				out = append(out, pathStep{name: inner[1 : len(inner)-1], index: -1})
				continue
			}
			n, err := strconv.Atoi(inner)
			if err != nil || n < 0 {
				return nil, fmt.Errorf("%q: [%s]: only plain paths (names and indexes, no filters or wildcards) are supported", s, inner)
			}
			out = append(out, pathStep{index: n})
		default:
			return nil, fmt.Errorf("%q: unexpected %q", s, rest[:1])
		}
	}
	return out, nil
}

// pathFound reports whether the path leads to a value that is not null and, for an array
// or object, not empty (as WireMock's matchesJsonPath decides).
func pathFound(p []pathStep, v any) bool {
	for _, st := range p {
		switch x := v.(type) {
		case map[string]any:
			if st.index >= 0 {
				return false
			}
			v = x[st.name]
		case []any:
			if st.index < 0 || st.index >= len(x) {
				return false
			}
			v = x[st.index]
		default:
			return false
		}
	}
	switch x := v.(type) {
	case nil:
		return false
	case []any:
		return len(x) > 0
	case map[string]any:
		return len(x) > 0
	}
	return true
}

// matchRequest reports whether st matches r (its body already read), scenario aside.
func (st *stub) matchRequest(r *http.Request, body []byte, parsed *jsonBody) bool {
	if st.method != "ANY" && st.method != r.Method {
		return false
	}
	var params map[string]string
	switch st.url.kind {
	case urlExact:
		if r.URL.RequestURI() != st.url.s {
			return false
		}
	case urlPathExact:
		if r.URL.EscapedPath() != st.url.s {
			return false
		}
	case urlRegex:
		if !st.url.re.MatchString(r.URL.RequestURI()) {
			return false
		}
	case urlPathRegex:
		if !st.url.re.MatchString(r.URL.EscapedPath()) {
			return false
		}
	case urlTemplate:
		var collect func(name, value string)
		if len(st.pathParams) > 0 {
			params = make(map[string]string, len(st.pathParams))
			collect = func(name, value string) { params[name] = value }
		}
		if !st.tmpl.match(r.URL.EscapedPath(), collect) {
			return false
		}
	}
	for _, pm := range st.pathParams {
		v, ok := params[pm.name]
		if !pm.m.matches([]string{v}, ok) {
			return false
		}
	}
	if len(st.query) > 0 {
		q := r.URL.Query()
		for _, qm := range st.query {
			vals, ok := q[qm.name]
			if !qm.m.matches(vals, ok) {
				return false
			}
		}
	}
	for _, hm := range st.headers {
		vals, ok := r.Header[hm.name]
		if hm.name == "Host" {
			// net/http moves Host out of r.Header; WireMock sees it as sent, port included.
			host := r.Host
			if host == "" && r.URL != nil {
				host = r.URL.Host
			}
			vals, ok = []string{host}, host != ""
		}
		if !hm.m.matches(vals, ok) {
			return false
		}
	}
	for _, cm := range st.cookies {
		var vals []string // every cookie of that name: "sid=a; sid=b" gives both, as in WireMock
		for _, c := range r.CookiesNamed(cm.name) {
			vals = append(vals, c.Value)
		}
		present := len(vals) > 0
		if !present && cm.m.op == "doesNotMatch" {
			return false // WireMock: an absent cookie, unlike a header or a parameter, does not match
		}
		if !cm.m.matches(vals, present) {
			return false
		}
	}
	for _, bm := range st.body {
		if !bm.matches(body, parsed) {
			return false
		}
	}
	return true
}
