package wiremock

import (
	"fmt"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strings"
)

func (m *mp) request(rq map[string]any, st *stub) {
	st.method = "ANY"
	urls := 0
	for k, v := range rq {
		field := "request." + k
		switch k {
		case "method":
			s, ok := v.(string)
			if !ok || s == "" {
				m.bad(field, "must be a string")
				continue
			}
			if up := strings.ToUpper(s); s != up {
				// WireMock compares methods case-sensitively: no client sends "get", so the
				// mapping would never answer. Refused, rather than served dead or matched
				// where WireMock would not.
				m.bad(field, "%q never matches in WireMock, which compares methods case-sensitively; write %q", s, up)
				continue
			}
			st.method = s
		case "url", "urlPath", "urlPattern", "urlPathPattern", "urlPathTemplate":
			urls++
			s, ok := v.(string)
			if !ok {
				m.bad(field, "must be a string")
				continue
			}
			m.url(k, s, st)
		case "queryParameters", "headers", "cookies", "pathParameters":
			obj, ok := v.(map[string]any)
			if !ok {
				m.bad(field, "must be an object of name to matcher")
				continue
			}
			names := slices.Sorted(maps.Keys(obj))
			for _, name := range names {
				sm, ok := m.stringMatcher(field+"."+name, obj[name])
				if !ok {
					continue
				}
				nm := namedMatcher{name: name, m: sm}
				switch k {
				case "queryParameters":
					st.query = append(st.query, nm)
				case "headers":
					nm.name = http.CanonicalHeaderKey(name)
					st.headers = append(st.headers, nm)
				case "cookies":
					st.cookies = append(st.cookies, nm)
				case "pathParameters":
					st.pathParams = append(st.pathParams, nm)
				}
			}
		case "bodyPatterns":
			list, ok := v.([]any)
			if !ok {
				m.bad(field, "must be an array of matchers")
				continue
			}
			for i, p := range list {
				if bm, ok := m.bodyMatcher(fmt.Sprintf("%s[%d]", field, i), p); ok {
					st.body = append(st.body, bm)
				}
			}
		default:
			m.unsupported(field)
		}
	}
	if urls > 1 {
		m.bad("request", "url, urlPath, urlPattern, urlPathPattern and urlPathTemplate exclude each other")
	}
	if len(st.pathParams) > 0 && st.tmpl == nil {
		m.bad("request.pathParameters", "needs urlPathTemplate")
	}
}

func (m *mp) url(kind, s string, st *stub) {
	switch kind {
	case "url":
		st.url = urlMatch{kind: urlExact, s: s}
	case "urlPath":
		st.url = urlMatch{kind: urlPathExact, s: s}
	case "urlPattern", "urlPathPattern":
		re, err := regexp.Compile(`^(?:` + s + `)$`)
		if err != nil {
			m.bad("request."+kind, "the regular expression does not compile in Go's RE2 syntax (no look-around or back-references): %v", err)
			return
		}
		k := urlRegex
		if kind == "urlPathPattern" {
			k = urlPathRegex
		}
		st.url = urlMatch{kind: k, re: re}
	case "urlPathTemplate":
		segs := strings.Split(strings.TrimPrefix(s, "/"), "/")
		t := &pathTemplate{}
		for _, sg := range segs {
			if strings.HasPrefix(sg, "{") && strings.HasSuffix(sg, "}") && len(sg) > 2 {
				t.segs = append(t.segs, tmplSeg{param: sg[1 : len(sg)-1]})
				continue
			}
			if strings.ContainsAny(sg, "{}") {
				m.bad("request.urlPathTemplate", "a parameter must be a whole segment ({name})")
				return
			}
			t.segs = append(t.segs, tmplSeg{lit: sg})
		}
		st.tmpl = t
		st.url = urlMatch{kind: urlTemplate, s: s}
	}
}

// stringMatcher reads {equalTo|contains|matches|doesNotMatch|absent, caseInsensitive}.
func (m *mp) stringMatcher(field string, v any) (*stringMatcher, bool) {
	obj, ok := v.(map[string]any)
	if !ok {
		m.bad(field, "must be a matcher object ({\"equalTo\": \"…\"})")
		return nil, false
	}
	sm := &stringMatcher{}
	ops := 0
	for k, val := range obj {
		switch k {
		case "caseInsensitive":
			b, ok := val.(bool)
			if !ok {
				m.bad(field+"."+k, "must be a boolean")
			}
			sm.fold = b
		case "equalTo", "contains", "matches", "doesNotMatch":
			ops++
			s, ok := val.(string)
			if !ok {
				m.bad(field+"."+k, "must be a string")
				continue
			}
			sm.op, sm.s = k, s
			if k == "matches" || k == "doesNotMatch" {
				re, err := regexp.Compile(`^(?:` + s + `)$`)
				if err != nil {
					m.bad(field+"."+k, "the regular expression does not compile in Go's RE2 syntax: %v", err)
					continue
				}
				sm.re = re
			}
		case "absent":
			ops++
			b, ok := val.(bool)
			if !ok {
				m.bad(field+"."+k, "must be a boolean")
			}
			sm.op, sm.absent = k, b
		default:
			m.unsupported(field + "." + k)
		}
	}
	if ops != 1 {
		m.bad(field, "needs exactly one of equalTo, contains, matches, doesNotMatch, absent")
		return nil, false
	}
	return sm, true
}

// bodyMatcher reads one bodyPatterns entry.
func (m *mp) bodyMatcher(field string, v any) (*bodyMatcher, bool) {
	obj, ok := v.(map[string]any)
	if !ok {
		m.bad(field, "must be a matcher object")
		return nil, false
	}
	bm := &bodyMatcher{}
	ops := 0
	for k, val := range obj {
		switch k {
		case "caseInsensitive":
			bm.fold, _ = val.(bool)
		case "ignoreArrayOrder":
			bm.ignoreOrder, _ = val.(bool)
		case "ignoreExtraElements":
			bm.ignoreExtra, _ = val.(bool)
		case "equalTo", "contains", "matches", "doesNotMatch":
			ops++
			s, ok := val.(string)
			if !ok {
				m.bad(field+"."+k, "must be a string")
				continue
			}
			bm.op, bm.s = k, s
			if k == "matches" || k == "doesNotMatch" {
				re, err := regexp.Compile(`^(?s:` + s + `)$`)
				if err != nil {
					m.bad(field+"."+k, "the regular expression does not compile in Go's RE2 syntax: %v", err)
					continue
				}
				bm.re = re
			}
		case "equalToJson":
			ops++
			bm.op = k
			if s, ok := val.(string); ok {
				j, err := decodeJSON([]byte(s))
				if err != nil {
					m.bad(field+"."+k, "is not JSON: %v", err)
					continue
				}
				bm.json = j
			} else {
				bm.json = val // numbers already json.Number, compared by exact value
			}
		case "matchesJsonPath":
			ops++
			bm.op = k
			s, ok := val.(string)
			if !ok {
				m.bad(field+"."+k, "only a plain path string ($.a.b[0]) is supported, not a path with a matcher")
				continue
			}
			p, err := parseJSONPath(s)
			if err != nil {
				m.bad(field+"."+k, "%v", err)
				continue
			}
			bm.path = p
		default:
			m.unsupported(field + "." + k)
		}
	}
	if ops != 1 {
		m.bad(field, "needs exactly one of equalTo, contains, matches, doesNotMatch, equalToJson, matchesJsonPath")
		return nil, false
	}
	return bm, true
}

// ---- response -----------------------------------------------------------------------------
