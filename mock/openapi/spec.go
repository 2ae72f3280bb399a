package openapi

import (
	"fmt"
	"maps"
	"net/http"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/pb33f/jsonschema/v6"
	"golang.org/x/net/http/httpguts"
)

// Spec is a loaded OpenAPI 3.0 or 3.1 description, checked and ready to answer requests.
// It is immutable and safe for concurrent use.
type Spec struct {
	// File is the description's path as given to Load.
	File string
	// Version is the description's openapi field ("3.0.3", "3.1.0").
	Version string

	v31     bool
	docs    map[string]*document
	main    *document
	ops     []*operation
	paths   []pathItem
	schemes map[string]*scheme
	global  [][]string // the description's security requirements (nil: none)

	// kept is what the answers built at load take; past maxKept, answers are built per request
	kept     int
	warnings []Problem
}

// maxKept bounds the answers of one description built at load and kept in memory: past it,
// the others are built for each request (each within MaxAnswer), so a short description of
// a thousand operations that each ask for a large answer cannot fill the memory at load.
const maxKept = 64 << 20

// pathItem is one path of the description and the methods it defines.
type pathItem struct {
	path    string
	key     string // its route path, "/pets/:id"
	line    int
	methods []string
}

// methods are the operations a path item may define, in the order they are listed.
var methods = []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"}

// Load reads the description at path (YAML or JSON) and the files its references name,
// checks it and prepares every operation. A description that cannot be served is a
// *LoadError listing each problem with its file, line and JSON pointer.
func Load(path string) (*Spec, error) {
	ld := &loader{docs: map[string]*document{}}
	d := ld.load(path, nil)
	if len(ld.problems) > 0 || d == nil {
		if abs, err := filepath.Abs(path); err == nil {
			for i := range ld.problems { // the description is named as it was given
				if ld.problems[i].File == abs {
					ld.problems[i].File = path
				}
			}
		}
		return nil, &LoadError{File: path, Problems: ld.problems}
	}
	s := &Spec{File: path, docs: ld.docs, main: d}
	c := &checker{s: s}
	c.run()
	if len(c.problems) == 0 {
		s.build(c)
	}
	if len(c.problems) > 0 {
		for i := range c.problems {
			if c.problems[i].File == "" {
				c.problems[i].File = path
			}
		}
		sort.SliceStable(c.problems, func(i, j int) bool {
			a, b := c.problems[i], c.problems[j]
			return a.File == b.File && a.Line < b.Line
		})
		return nil, &LoadError{File: path, Problems: c.problems}
	}
	return s, nil
}

// Files lists the absolute paths of the description's files: its own and every file its
// references name.
func (s *Spec) Files() []string {
	out := make([]string, 0, len(s.docs))
	for p := range s.docs {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// Operations is the number of operations the description defines.
func (s *Spec) Operations() int { return len(s.ops) }

// resolve follows references from l.
func (s *Spec) resolve(l loc) (loc, error) { return resolve(s.docs, l) }

// res follows references from l, giving a nil value when they lead nowhere (the checker has
// reported those already).
func (s *Spec) res(l loc) loc {
	r, err := s.resolve(l)
	if err != nil {
		return loc{d: l.d, ptr: l.ptr}
	}
	return r
}

// operation is one method of one path, prepared.
type operation struct {
	s        *Spec
	method   string // upper-case
	path     string // as written, "/pets/{id}"
	key      string // the route key, "GET /pets/:id"
	line     int
	id       string
	names    map[string]string // route parameter → path parameter
	segs     []segMatch        // templated parts of segments (nil: every segment is whole)
	params   []*param
	body     *requestBody
	security [][]string // alternatives, each a list of scheme names; nil: none needed
	resps    []*response
	byCode   map[string]*response
	chosen   *response // the answer when nothing steers it
}

// segMatch checks a path segment that mixes text and parameters ("{name}.json").
type segMatch struct {
	key   string // the route parameter holding the segment
	re    *regexp.Regexp
	names []string
}

// param is one parameter of an operation.
type param struct {
	name     string
	in       string
	required bool
	key      string // its name in the route key (path parameters)
	kinds    []string
	items    []string // item types of an array parameter
	explode  bool
	schema   *jsonschema.Schema
}

// requestBody is an operation's request body.
type requestBody struct {
	required bool
	media    []*reqMedia
}

type reqMedia struct {
	typ    string
	schema *jsonschema.Schema
	json   bool
}

// response is one response of an operation with what it answers, computed once.
type response struct {
	code     string
	status   int
	headers  map[string]string
	media    []*media          // application/json first, then as listed
	bodyless map[string]string // the headers of an answer without a body
}

// media is one media type of a response.
type media struct {
	typ      string
	json     bool
	static   body // the static answer
	examples map[string]body
	schema   loc               // for generated answers; v nil when there is none
	headers  map[string]string // the response's headers and this Content-Type
}

// body is an answer body prepared at load: its bytes, or why there are none.
type body struct {
	b []byte
	// none: the media type has no example and no schema (an empty body)
	none bool
	// tooLarge: the answer would pass MaxAnswer; it is answered with a 500 problem
	tooLarge bool
	// lazy: the description's answers kept at load passed maxKept, so this one is built for
	// each request, from val (an example) or, when fromSchema, from the media type's schema
	lazy       bool
	val        any
	fromSchema bool
}

var paramName = regexp.MustCompile(`^[A-Za-z0-9_]+$`)

// routePath turns "/pets/{id}" into the interceptor's "/pets/:id", naming parameters the
// route syntax cannot hold p0, p1, …; segments mixing text and parameters become parameters
// checked by a regular expression.
func routePath(p string) (string, map[string]string, []segMatch) {
	names := map[string]string{}
	var checks []segMatch
	segs := strings.Split(strings.TrimPrefix(p, "/"), "/")
	n := 0
	fresh := func(name string) string {
		key := name
		if !paramName.MatchString(name) {
			key = "p" + strconv.Itoa(n)
		}
		for {
			if _, taken := names[key]; !taken {
				break
			}
			key = "p" + strconv.Itoa(n)
			n++
		}
		n++
		names[key] = name
		return key
	}
	for i, seg := range segs {
		open := strings.IndexByte(seg, '{')
		if open < 0 {
			if strings.HasPrefix(seg, ":") || seg == "*" {
				segs[i] = "%3A" + seg[1:]
				if seg == "*" {
					segs[i] = "%2A"
				}
			}
			continue
		}
		if open == 0 && strings.HasSuffix(seg, "}") && strings.Count(seg, "{") == 1 {
			segs[i] = ":" + fresh(seg[1:len(seg)-1])
			continue
		}
		var re strings.Builder
		re.WriteString("^")
		var ns []string
		rest := seg
		for {
			o := strings.IndexByte(rest, '{')
			if o < 0 {
				re.WriteString(regexp.QuoteMeta(rest))
				break
			}
			c := strings.IndexByte(rest[o:], '}')
			if c < 0 {
				re.WriteString(regexp.QuoteMeta(rest))
				break
			}
			re.WriteString(regexp.QuoteMeta(rest[:o]))
			re.WriteString("(.+?)")
			ns = append(ns, rest[o+1:o+c])
			rest = rest[o+c+1:]
		}
		re.WriteString("$")
		key := fresh("segment" + strconv.Itoa(i))
		delete(names, key)
		segs[i] = ":" + key
		checks = append(checks, segMatch{key: key, re: regexp.MustCompile(re.String()), names: ns})
	}
	return "/" + strings.Join(segs, "/"), names, checks
}

// build prepares every operation. Problems found on the way go to c.
func (s *Spec) build(c *checker) {
	root := loc{d: s.main, v: s.main.root}
	s.Version = root.obj().str("openapi")
	s.v31 = strings.HasPrefix(s.Version, "3.1")
	comp := newCompiler(s)
	s.schemes = map[string]*scheme{}
	for _, k := range root.child("components").child("securitySchemes").obj().keysOrNil() {
		l := s.res(root.child("components").child("securitySchemes").child(k))
		s.schemes[k] = newScheme(l.obj())
	}
	if _, ok := root.obj().get("security"); ok {
		s.global = requirements(root.child("security"))
	}
	paths := root.child("paths")
	for _, p := range paths.obj().keysOrNil() {
		item := s.res(paths.child(p))
		rp, names, checks := routePath(p)
		pi := pathItem{path: p, key: rp, line: paths.obj().lineOf(p)}
		for _, m := range methods {
			ol := item.child(m)
			if ol.obj() == nil {
				continue
			}
			op := &operation{s: s, method: strings.ToUpper(m), path: p, key: strings.ToUpper(m) + " " + rp,
				line: item.obj().lineOf(m), id: ol.obj().str("operationId"), names: names, segs: checks}
			op.params = s.params(c, comp, item, ol, names)
			op.body = s.requestBody(c, comp, ol)
			if _, ok := ol.obj().get("security"); ok {
				op.security = requirements(ol.child("security"))
			} else {
				op.security = s.global
			}
			s.responses(op, ol)
			s.ops = append(s.ops, op)
			pi.methods = append(pi.methods, op.method)
		}
		s.paths = append(s.paths, pi)
	}
	comp.finish(c)
}

func (o *obj) keysOrNil() []string {
	if o == nil {
		return nil
	}
	return o.keys
}

// requirements reads a security requirement list: alternatives of scheme names. An empty
// requirement ({}) means "none needed", so the list asks for nothing.
func requirements(l loc) [][]string {
	list, _ := l.v.([]any)
	out := [][]string{}
	for i := range list {
		req := l.index(i).obj()
		if req == nil || len(req.keys) == 0 {
			return nil
		}
		out = append(out, slices.Clone(req.keys))
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// params merges the path item's parameters with the operation's (which win by name and
// location) and compiles their schemas.
func (s *Spec) params(c *checker, comp *compiler, item, op loc, names map[string]string) []*param {
	var out []*param
	byKey := map[string]int{}
	for _, src := range []loc{item.child("parameters"), op.child("parameters")} {
		list, _ := src.v.([]any)
		for i := range list {
			l := s.res(src.index(i))
			o := l.obj()
			if o == nil {
				continue
			}
			p := &param{name: o.str("name"), in: o.str("in"), required: o.boolean("required")}
			if p.in == "path" {
				p.required = true
				for k, n := range names {
					if n == p.name {
						p.key = k
					}
				}
			}
			style := o.str("style")
			p.explode = style == "" || style == "form"
			if v, ok := o.get("explode"); ok {
				b, _ := v.(bool)
				p.explode = b
			}
			sl := l.child("schema")
			if sl.v == nil {
				if ct := l.child("content").obj(); ct != nil && len(ct.keys) > 0 {
					sl = l.child("content").child(ct.keys[0]).child("schema")
				}
			}
			if sl.v != nil {
				rs := s.res(sl)
				p.kinds = s.kinds(rs)
				if slices.Contains(p.kinds, "array") {
					p.items = s.kinds(s.res(rs.child("items")))
				}
				comp.compile(sl, &p.schema)
			}
			k := p.in + "\x00" + p.name
			if j, ok := byKey[k]; ok {
				out[j] = p
				continue
			}
			byKey[k] = len(out)
			out = append(out, p)
		}
	}
	return out
}

// kinds returns the types a schema allows ("type" as a string or a list, with "null" for a
// 3.0 nullable), inferred from its parts when it names none.
func (s *Spec) kinds(l loc) []string { return s.kindsAt(l, 0) }

func (s *Spec) kindsAt(l loc, depth int) []string {
	o := l.obj()
	if o == nil || depth > maxDepth {
		return nil
	}
	var out []string
	switch t := o.vals["type"].(type) {
	case string:
		out = []string{t}
	case []any:
		for _, e := range t {
			if str, ok := e.(string); ok {
				out = append(out, str)
			}
		}
	}
	if len(out) == 0 {
		for _, k := range []string{"allOf", "oneOf", "anyOf"} {
			list, _ := o.vals[k].([]any)
			for i := range list {
				out = append(out, s.kindsAt(s.res(l.child(k).index(i)), depth+1)...)
			}
		}
	}
	if o.boolean("nullable") {
		out = append(out, "null")
	}
	return out
}

// requestBody prepares an operation's request body.
func (s *Spec) requestBody(c *checker, comp *compiler, op loc) *requestBody {
	l := s.res(op.child("requestBody"))
	o := l.obj()
	if o == nil {
		return nil
	}
	rb := &requestBody{required: o.boolean("required")}
	content := l.child("content")
	for _, typ := range content.obj().keysOrNil() {
		ml := s.res(content.child(typ))
		rm := &reqMedia{typ: strings.ToLower(typ), json: isJSON(typ)}
		if sl := ml.child("schema"); sl.v != nil && rm.json {
			comp.compile(sl, &rm.schema)
		}
		rb.media = append(rb.media, rm)
	}
	return rb
}

// responses prepares an operation's responses and picks the one it answers by default: the
// lowest 2xx, else default, else the first.
func (s *Spec) responses(op *operation, ol loc) {
	rl := ol.child("responses")
	op.byCode = map[string]*response{}
	for _, code := range rl.obj().keysOrNil() {
		r := s.response(code, s.res(rl.child(code)))
		op.resps = append(op.resps, r)
		op.byCode[strings.ToUpper(code)] = r
	}
	for _, r := range op.resps {
		if r.code != "default" && r.status >= 200 && r.status < 300 && (op.chosen == nil || op.chosen.code == "default" || r.status < op.chosen.status) {
			op.chosen = r
		}
	}
	if op.chosen == nil {
		op.chosen = op.byCode["DEFAULT"]
	}
	if op.chosen == nil && len(op.resps) > 0 {
		op.chosen = op.resps[0]
	}
}

// statusOf turns a response key into a status: "201" → 201, "4XX" → 400, default → 200.
func statusOf(code string) int {
	if n, err := strconv.Atoi(code); err == nil {
		return n
	}
	if len(code) == 3 && code[0] >= '1' && code[0] <= '5' && strings.EqualFold(code[1:], "XX") {
		return int(code[0]-'0') * 100
	}
	return http.StatusOK
}

func isJSON(typ string) bool {
	t := strings.ToLower(strings.TrimSpace(strings.Split(typ, ";")[0]))
	return t == "application/json" || strings.HasSuffix(t, "+json") || t == "*/*" || t == "application/*"
}

// response prepares one response: its headers' values, and for each media type the static
// answer and the named examples, encoded.
func (s *Spec) response(code string, l loc) *response {
	r := &response{code: code, status: statusOf(code), headers: map[string]string{}}
	hs := l.child("headers")
	for _, name := range hs.obj().keysOrNil() {
		if strings.EqualFold(name, "Content-Type") {
			continue
		}
		at := hs.child(name)
		if !httpguts.ValidHeaderFieldName(name) {
			s.warn(at, fmt.Sprintf("%q is not a valid HTTP header name (letters, digits and !#$%%&'*+-.^_`|~, no spaces or colons); the header is left out of answers", name))
			continue
		}
		h := s.res(at)
		if v, ok := s.headerValue(h); ok {
			if strings.ContainsAny(v, "\r\n\x00") {
				s.warn(at, "the value holds a line break or NUL, which HTTP does not allow in a header; it is sent with spaces in their place")
				v = strings.NewReplacer("\r\n", " ", "\r", " ", "\n", " ", "\x00", " ").Replace(v)
			}
			r.headers[http.CanonicalHeaderKey(name)] = v
		}
	}
	content := l.child("content")
	for _, typ := range content.obj().keysOrNil() {
		ml := s.res(content.child(typ))
		m := &media{typ: typ, json: isJSON(typ), examples: map[string]body{}, schema: ml.child("schema")}
		mo := ml.obj()
		var val any
		found := false
		if v, ok := mo.get("example"); ok {
			val, found = v, true
		}
		ex := ml.child("examples")
		for _, name := range ex.obj().keysOrNil() {
			e := s.res(ex.child(name)).obj()
			v, ok := e.get("value")
			if !ok {
				continue
			}
			m.examples[name] = s.prepare(m, v, false)
			if !found {
				val, found = v, true
			}
		}
		switch {
		case found:
			m.static = s.prepare(m, val, false)
		case m.schema.v != nil:
			m.static = s.prepare(m, nil, true)
		default:
			m.static = body{none: true}
		}
		if m.schema.v == nil {
			m.schema = loc{}
		}
		if m.static.tooLarge {
			at := content.child(typ)
			s.warn(at, fmt.Sprintf("the answer would pass %d MB; it is answered with a 500 problem (give this media type a smaller example)", MaxAnswer>>20))
		}
		r.media = append(r.media, m)
	}
	sort.SliceStable(r.media, func(i, j int) bool {
		return strings.EqualFold(r.media[i].typ, "application/json") && !strings.EqualFold(r.media[j].typ, "application/json")
	})
	r.bodyless = r.headers
	for _, m := range r.media {
		m.headers = maps.Clone(r.headers)
		m.headers["Content-Type"] = m.typ
	}
	return r
}

// warn records what the description asks for at l and is served otherwise.
func (s *Spec) warn(l loc, msg string) {
	p := Problem{File: s.File, Line: l.line(), Pointer: l.ptr, Message: msg}
	if l.d != nil && l.d != s.main {
		p.File = l.d.path
	}
	s.warnings = append(s.warnings, p)
}

// headerValue is the value a declared response header is sent with: its example, else the
// first of its examples, else one from its schema.
func (s *Spec) headerValue(h loc) (string, bool) {
	o := h.obj()
	if o == nil {
		return "", false
	}
	var v any
	found := false
	if e, ok := o.get("example"); ok {
		v, found = e, true
	} else if ex := h.child("examples"); ex.obj() != nil && len(ex.obj().keys) > 0 {
		if e, ok := s.res(ex.child(ex.obj().keys[0])).obj().get("value"); ok {
			v, found = e, true
		}
	}
	if !found {
		sl := h.child("schema")
		if sl.v == nil {
			return "", false
		}
		g := &generator{s: s, limit: maxHeader}
		v, found = g.static(sl, 0), true
		if g.over {
			return "", false // a header of more than maxHeader: left out
		}
	}
	return scalarString(v), true
}

// maxHeader bounds the value of a response header built from its schema: a longer one is
// left out of the answer.
const maxHeader = 8 << 10

// prepare builds an answer body at load: the example val, else (fromSchema) one built from
// m's schema. It stays within MaxAnswer (tooLarge past it) and, while the description's
// answers kept so far stay within maxKept, is kept; past that it is built per request.
func (s *Spec) prepare(m *media, val any, fromSchema bool) body {
	limit := min(MaxAnswer, maxKept-s.kept)
	b, ok := s.buildBody(m, val, fromSchema, limit)
	if !ok {
		if limit < MaxAnswer {
			return body{lazy: true, val: val, fromSchema: fromSchema}
		}
		return body{tooLarge: true}
	}
	s.kept += len(b)
	return body{b: b}
}

// buildBody encodes val, or (fromSchema) the static answer of m's schema, within limit bytes;
// false when it would pass them.
func (s *Spec) buildBody(m *media, val any, fromSchema bool, limit int) ([]byte, bool) {
	if fromSchema {
		g := &generator{s: s, limit: limit}
		val = g.static(m.schema, 0)
		if g.over {
			return nil, false
		}
	} else if sizeOf(val, limit) > limit {
		return nil, false
	}
	b := s.encode(m, val)
	if len(b) > limit {
		return nil, false
	}
	return b, true
}

// bytes is what b answers: its bytes, built now when it was not kept at load; false when the
// answer would pass MaxAnswer.
func (s *Spec) bytes(m *media, b body) ([]byte, bool) {
	switch {
	case b.tooLarge:
		return nil, false
	case b.lazy:
		return s.buildBody(m, b.val, b.fromSchema, MaxAnswer)
	case b.b == nil:
		return []byte{}, true
	}
	return b.b, true
}

// Warnings lists what the description asks for and is served otherwise: answers that would
// pass MaxAnswer (answered with a 500 problem), each with its file, line and JSON pointer.
func (s *Spec) Warnings() []Problem { return slices.Clone(s.warnings) }

// scalarString writes a header value: scalars as text, anything else as JSON.
func scalarString(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case bool, int64, int, float64:
		return fmt.Sprint(x)
	default:
		b, err := marshal(v)
		if err != nil {
			return ""
		}
		return string(b)
	}
}

// encode writes an answer body for media m: JSON for JSON media types, a string as it is for
// the others.
func (s *Spec) encode(m *media, v any) []byte {
	if str, ok := v.(string); ok && !m.json {
		return []byte(str)
	}
	b, err := marshal(v)
	if err != nil {
		return nil
	}
	return b
}
