package wiremock

import (
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
	fold   bool
	absent bool
}

// matches reports whether the values (nil: not present) fit: absent checks presence, the
// others match when any value fits (doesNotMatch: when none of them matches).
func (m *stringMatcher) matches(vals []string, present bool) bool {
	if m.op == "absent" {
		return present != m.absent
	}
	if !present {
		return false
	}
	if m.op == "doesNotMatch" {
		for _, v := range vals {
			if m.re.MatchString(v) {
				return false
			}
		}
		return true
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
	case "contains":
		if m.fold {
			return strings.Contains(strings.ToLower(v), strings.ToLower(m.s))
		}
		return strings.Contains(v, m.s)
	case "matches":
		return m.re.MatchString(v)
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
	case "contains":
		if m.fold {
			return strings.Contains(strings.ToLower(string(body)), strings.ToLower(m.s))
		}
		return strings.Contains(string(body), m.s)
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
		j.ok = json.Unmarshal(body, &j.v) == nil
	}
	return j.v, j.ok
}

// jsonEqual compares JSON values: numbers by value, objects by keys (actual may have more
// with ignoreExtra), arrays in order (any order with ignoreOrder; with ignoreExtra, extra
// items after the expected ones, or anywhere with ignoreOrder too).
func jsonEqual(want, got any, ignoreOrder, ignoreExtra bool) bool {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok || (!ignoreExtra && len(g) != len(w)) {
			return false
		}
		for k, wv := range w {
			gv, ok := g[k]
			if !ok || !jsonEqual(wv, gv, ignoreOrder, ignoreExtra) {
				return false
			}
		}
		return true
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) < len(w) || (!ignoreExtra && len(g) != len(w)) {
			return false
		}
		if !ignoreOrder {
			// Position by position, as WireMock compares them: ignoreExtra lets the request
			// have more items after the last expected one, never between them.
			for i, wv := range w {
				if !jsonEqual(wv, g[i], ignoreOrder, ignoreExtra) {
					return false
				}
			}
			return true
		}
		used := make([]bool, len(g))
		for _, wv := range w {
			found := false
			for j, gv := range g {
				if !used[j] && jsonEqual(wv, gv, ignoreOrder, ignoreExtra) {
					used[j], found = true, true
					break
				}
			}
			if !found {
				return false
			}
		}
		return true
	default:
		return want == got
	}
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
		if !hm.m.matches(vals, ok) {
			return false
		}
	}
	for _, cm := range st.cookies {
		c, err := r.Cookie(cm.name)
		var vals []string
		if err == nil {
			vals = []string{c.Value}
		}
		if !cm.m.matches(vals, err == nil) {
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
