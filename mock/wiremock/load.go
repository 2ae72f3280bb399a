// Package wiremock serves WireMock stub mappings as they are: a directory holding
// mappings/*.json and __files/, as WireMock's recorder, its admin API and converters from
// Postman or OpenAPI write it. Load reads the directory into Stubs, an http.Handler that
// answers the way WireMock does (the lowest priority number wins, then the mapping loaded
// last; a miss answers 404 "Request was not matched"), with scenarios and faults.
//
// What a mapping asks for and this package does not do is never ignored silently: Load
// reports every such field as a Problem (file, mapping, field), and skips the mapping, since
// serving it without the field would answer requests WireMock would not, or answer them
// differently. The package uses the standard library only.
package wiremock

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/acme/app/mock"
)

// DefaultPriority is the priority of a mapping that names none (WireMock's default).
const DefaultPriority = 5

// maxMappingFile bounds one mapping file.
const maxMappingFile = 16 << 20

// Problem is a mapping, or a field of one, that cannot be served as WireMock would.
type Problem struct {
	File    string `json:"file"`              // relative to the directory
	Mapping string `json:"mapping,omitempty"` // name, else id, else its index in the file
	Field   string `json:"field,omitempty"`   // e.g. response.transformers
	Message string `json:"message"`
}

func (p Problem) String() string {
	var b strings.Builder
	b.WriteString(p.File)
	if p.Mapping != "" {
		fmt.Fprintf(&b, ": mapping %s", p.Mapping)
	}
	if p.Field != "" {
		fmt.Fprintf(&b, ": %s", p.Field)
	}
	b.WriteString(": ")
	b.WriteString(p.Message)
	return b.String()
}

// Load reads dir/mappings/*.json (each a mapping, or {"mappings": [...]}) and the bodies
// they name in dir/__files. Mappings are ranked as WireMock ranks them: by priority, then
// the one loaded last first (files in name order, mappings in file order). Mappings with a
// field this package does not support are skipped and reported. The error is for a
// directory that cannot be read at all.
func Load(dir string) (*Stubs, []Problem, error) {
	mdir := filepath.Join(dir, "mappings")
	var files []string
	err := filepath.WalkDir(mdir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.EqualFold(filepath.Ext(p), ".json") {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("wiremock: read %s: %w", mdir, err)
	}
	sort.Strings(files)
	l := &loader{dir: dir, files: filepath.Join(dir, "__files")}
	for _, f := range files {
		l.file(f)
	}
	s := newStubs(l.stubs)
	return s, l.problems, nil
}

type loader struct {
	dir, files string
	stubs      []*stub
	problems   []Problem
	rel        string // the file being read, relative to dir
}

func (l *loader) file(name string) {
	l.rel, _ = filepath.Rel(l.dir, name)
	l.rel = filepath.ToSlash(l.rel)
	b, err := readBounded(name, maxMappingFile)
	if err != nil {
		l.problems = append(l.problems, Problem{File: l.rel, Message: err.Error()})
		return
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(b, &top); err != nil {
		l.problems = append(l.problems, Problem{File: l.rel, Message: "not a JSON object: " + err.Error()})
		return
	}
	if raw, ok := top["mappings"]; ok && top["request"] == nil {
		var list []json.RawMessage
		if err := json.Unmarshal(raw, &list); err != nil {
			l.problems = append(l.problems, Problem{File: l.rel, Field: "mappings", Message: "must be an array of mappings"})
			return
		}
		for i, m := range list {
			l.mapping(m, fmt.Sprintf("#%d", i+1))
		}
		return
	}
	l.mapping(b, "")
}

func readBounded(name string, limit int64) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.Size() > limit {
		return nil, fmt.Errorf("%d bytes: over the %d MB limit", st.Size(), limit>>20)
	}
	var buf bytes.Buffer
	_, err = buf.ReadFrom(f)
	return buf.Bytes(), err
}

// mp reads one mapping, collecting its problems; a mapping with any is skipped.
type mp struct {
	l        *loader
	label    string
	problems []Problem
}

func (m *mp) bad(field, format string, args ...any) {
	m.problems = append(m.problems, Problem{File: m.l.rel, Mapping: m.label, Field: field, Message: fmt.Sprintf(format, args...)})
}

func (m *mp) unsupported(field string) {
	m.bad(field, "not supported; the mapping is skipped")
}

// object decodes raw as a JSON object (numbers kept as json.Number).
func object(raw json.RawMessage) (map[string]any, bool) {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v map[string]any
	if err := d.Decode(&v); err != nil || v == nil {
		return nil, false
	}
	return v, true
}

func (l *loader) mapping(raw json.RawMessage, index string) {
	obj, ok := object(raw)
	m := &mp{l: l, label: index}
	if !ok {
		m.bad("", "not a JSON object")
		l.problems = append(l.problems, m.problems...)
		return
	}
	if s, ok := obj["name"].(string); ok && s != "" {
		m.label = fmt.Sprintf("%q", s)
	} else if s, ok := obj["id"].(string); ok && s != "" {
		m.label = s
	} else if s, ok := obj["uuid"].(string); ok && s != "" {
		m.label = s
	}
	st := &stub{label: m.label, priority: DefaultPriority, order: len(l.stubs)}
	for k, v := range obj {
		switch k {
		case "id", "uuid", "name", "metadata", "persistent", "insertionIndex":
		case "priority":
			n, ok := intOf(v)
			if !ok || n < 1 {
				m.bad(k, "must be a positive integer")
			}
			st.priority = n
		case "request":
			rq, ok := v.(map[string]any)
			if !ok {
				m.bad(k, "must be an object")
				continue
			}
			m.request(rq, st)
		case "response":
			rs, ok := v.(map[string]any)
			if !ok {
				m.bad(k, "must be an object")
				continue
			}
			m.response(rs, st)
		case "scenarioName":
			st.scenario, _ = v.(string)
		case "requiredScenarioState":
			st.required, _ = v.(string)
		case "newScenarioState":
			st.newState, _ = v.(string)
		default:
			m.unsupported(k)
		}
	}
	if _, ok := obj["request"]; !ok {
		m.bad("request", "missing")
	}
	if (st.required != "" || st.newState != "") && st.scenario == "" {
		m.bad("scenarioName", "requiredScenarioState and newScenarioState need a scenarioName")
	}
	if len(m.problems) > 0 {
		l.problems = append(l.problems, m.problems...)
		return
	}
	l.stubs = append(l.stubs, st)
}

func intOf(v any) (int, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	i, err := n.Int64()
	if err != nil || i > math.MaxInt32 || i < math.MinInt32 {
		return 0, false
	}
	return int(i), true
}

func floatOf(v any) (float64, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	f, err := n.Float64()
	return f, err == nil && f >= 0
}

// ---- request ------------------------------------------------------------------------------

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
			st.method = strings.ToUpper(s)
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
			names := slices.Sorted(mapsKeys(obj))
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

func mapsKeys(m map[string]any) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
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
				var j any
				if err := json.Unmarshal([]byte(s), &j); err != nil {
					m.bad(field+"."+k, "is not JSON: %v", err)
					continue
				}
				bm.json = j
			} else {
				bm.json = normalize(val)
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

// normalize turns json.Number into float64, as json.Unmarshal into any gives.
func normalize(v any) any {
	switch x := v.(type) {
	case json.Number:
		f, _ := x.Float64()
		return f
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, c := range x {
			out[k] = normalize(c)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, c := range x {
			out[i] = normalize(c)
		}
		return out
	}
	return v
}

// ---- response -----------------------------------------------------------------------------

func (m *mp) response(rs map[string]any, st *stub) {
	r := &answer{status: http.StatusOK, header: http.Header{}}
	bodies := 0
	for k, v := range rs {
		field := "response." + k
		switch k {
		case "status":
			n, ok := intOf(v)
			if !ok || n < 100 || n > 599 {
				m.bad(field, "must be an HTTP status (100-599)")
				continue
			}
			r.status = n
		case "statusMessage":
			s, ok := v.(string)
			if !ok || strings.ContainsAny(s, "\r\n") {
				m.bad(field, "must be a one-line string")
				continue
			}
			r.message = s
		case "headers":
			obj, ok := v.(map[string]any)
			if !ok {
				m.bad(field, "must be an object")
				continue
			}
			for name, hv := range obj {
				switch x := hv.(type) {
				case string:
					r.header.Add(name, x)
				case []any:
					for _, e := range x {
						s, ok := e.(string)
						if !ok {
							m.bad(field+"."+name, "must be a string or an array of strings")
							break
						}
						r.header.Add(name, s)
					}
				default:
					m.bad(field+"."+name, "must be a string or an array of strings")
				}
			}
		case "body":
			bodies++
			s, ok := v.(string)
			if !ok {
				m.bad(field, "must be a string (use jsonBody for JSON)")
				continue
			}
			r.body = []byte(s)
		case "jsonBody":
			bodies++
			b, err := json.Marshal(v)
			if err != nil {
				m.bad(field, "%v", err)
				continue
			}
			r.body, r.json = b, true
		case "base64Body":
			bodies++
			s, _ := v.(string)
			b, err := base64.StdEncoding.DecodeString(s)
			if err != nil {
				m.bad(field, "is not base64: %v", err)
				continue
			}
			r.body = b
		case "bodyFileName":
			bodies++
			s, ok := v.(string)
			if !ok || s == "" {
				m.bad(field, "must be a file name under __files")
				continue
			}
			b, err := m.bodyFile(s)
			if err != nil {
				m.bad(field, "%v", err)
				continue
			}
			r.body = b
		case "fixedDelayMilliseconds":
			n, ok := floatOf(v)
			if !ok {
				m.bad(field, "must be a non-negative number")
				continue
			}
			r.delay = delay{kind: "fixed", a: ms(n)}
		case "delayDistribution":
			m.delayDistribution(field, v, r)
		case "fault":
			s, _ := v.(string)
			switch s {
			case "EMPTY_RESPONSE", "MALFORMED_RESPONSE_CHUNK", "RANDOM_DATA_THEN_CLOSE", "CONNECTION_RESET_BY_PEER":
				r.fault = s
			default:
				m.bad(field, "unknown fault %q", s)
			}
		default:
			m.unsupported(field)
		}
	}
	if bodies > 1 {
		m.bad("response", "body, jsonBody, base64Body and bodyFileName exclude each other")
	}
	if r.json && r.header.Get("Content-Type") == "" {
		r.header.Set("Content-Type", "application/json")
	}
	st.answer = r
}

func ms(n float64) time.Duration { return time.Duration(n * float64(time.Millisecond)) }

func (m *mp) delayDistribution(field string, v any, r *answer) {
	obj, ok := v.(map[string]any)
	if !ok {
		m.bad(field, "must be an object")
		return
	}
	kind, _ := obj["type"].(string)
	num := func(k string, required bool) float64 {
		val, has := obj[k]
		if !has {
			if required {
				m.bad(field+"."+k, "missing")
			}
			return 0
		}
		f, ok := floatOf(val)
		if !ok {
			m.bad(field+"."+k, "must be a non-negative number")
		}
		return f
	}
	for k := range obj {
		known := map[string][]string{"uniform": {"type", "lower", "upper"}, "lognormal": {"type", "median", "sigma", "maxValue"}}[kind]
		if known != nil && !slices.Contains(known, k) {
			m.unsupported(field + "." + k)
		}
	}
	switch kind {
	case "uniform":
		lo, hi := num("lower", true), num("upper", true)
		if hi < lo {
			m.bad(field, "upper is below lower")
		}
		r.delay = delay{kind: kind, a: ms(lo), b: ms(hi)}
	case "lognormal":
		r.delay = delay{kind: kind, a: ms(num("median", true)), sigma: num("sigma", true), b: ms(num("maxValue", false))}
	default:
		m.bad(field+".type", "%q: only uniform and lognormal are supported", kind)
	}
}

// bodyFile reads name under __files; a name that leaves __files is refused.
func (m *mp) bodyFile(name string) ([]byte, error) {
	clean := path.Clean("/" + filepath.ToSlash(name))
	if strings.Contains(name, "\x00") || clean == "/" || filepath.IsAbs(name) || strings.HasPrefix(path.Clean(filepath.ToSlash(name)), "../") {
		return nil, fmt.Errorf("%q is outside __files", name)
	}
	full := filepath.Join(m.l.files, filepath.FromSlash(clean))
	real, err := filepath.EvalSymlinks(full)
	if err != nil {
		return nil, fmt.Errorf("%q: %w", name, errors.Unwrap(err))
	}
	base, err := filepath.EvalSymlinks(m.l.files)
	if err != nil {
		return nil, err
	}
	if rel, err := filepath.Rel(base, real); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return nil, fmt.Errorf("%q leads outside __files", name)
	}
	return readBounded(real, maxMappingFile)
}

// Closest returns the labels of up to n stubs whose URLs are nearest to url (for a miss).
func (s *Stubs) Closest(url string, n int) []string {
	return mock.Closest(s.urls, url, n)
}
