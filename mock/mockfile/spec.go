package mockfile

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/acme/app/mock"
)

// mocks reads the route key → response spec mapping.
func (p *parser) mocks(n *yaml.Node) {
	n = resolve(n)
	if n.Tag == "!!null" {
		return
	}
	if n.Kind != yaml.MappingNode {
		p.fail(n, "", CodeType, "mocks must be a mapping of route keys (\"GET /users/:id\") to response specs")
		return
	}
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		key := strings.TrimSpace(k.Value)
		if line, dup := seen[key]; dup {
			p.fail(k, key, mock.VShadowedRoute, "route %q is defined twice (first at line %d)", key, line)
			continue
		}
		seen[key] = k.Line
		var src any
		_ = v.Decode(&src)
		p.dynamic, p.cache = false, nil
		h := p.route(key, v)
		// the spec is kept as JSON, not as the decoded maps: a map[string]any per object of
		// the spec cost about a kilobyte per route, for an admin listing that prints it
		b, err := json.Marshal(JSONValue(src))
		rc := mock.RouteCache{Digest: digest(key, b), Off: p.dynamic}
		if p.cache != nil {
			rc.Off = !*p.cache
		}
		r := Route{Key: key, Line: k.Line, Handler: h, Cache: rc}
		if err == nil {
			r.Source = json.RawMessage(b)
		}
		p.set.Routes = append(p.set.Routes, r)
	}
}

var specFields = []string{"status", "statusText", "data", "body", "headers", "delay", "generate", "sequence", "templating", "cache"}

// digest identifies a route's definition: a hash of its key and its spec as JSON (spec, as
// json.Marshal writes it: map keys sorted, so the same spec always gives the same digest).
func digest(key string, spec []byte) string {
	sum := sha256.Sum256(append([]byte(key+"\x00"), spec...))
	return hex.EncodeToString(sum[:12])
}

// route compiles one response spec (or a sequence of them) into a handler.
func (p *parser) route(key string, n *yaml.Node) mock.Handler {
	f := p.fields(n, key, "the response spec", specFields...)
	if f == nil {
		return nil
	}
	if cn, ok := f["cache"]; ok {
		if b, good := p.boolean(cn, key, "cache"); good {
			p.cache = &b
		}
	}
	seqNode, isSeq := f["sequence"]
	if isSeq {
		p.dynamic = true
	}
	if !isSeq {
		r := p.response(key, f, resolve(n))
		if r == nil {
			return nil
		}
		return r.handler()
	}
	for _, other := range []string{"status", "statusText", "data", "body", "headers", "generate"} {
		if on, ok := f[other]; ok {
			p.fail(on, key, CodeConflict, "%s cannot be combined with sequence: put it in each step", other)
		}
	}
	seqNode = resolve(seqNode)
	if seqNode.Kind != yaml.SequenceNode || len(seqNode.Content) == 0 {
		p.fail(seqNode, key, CodeSequence, "sequence must be a non-empty list of response specs")
		return nil
	}
	steps := make([]*response, 0, len(seqNode.Content))
	for i, c := range seqNode.Content {
		sf := p.fields(c, key, fmt.Sprintf("sequence step %d", i+1), specFields...)
		if sf == nil {
			continue
		}
		if sn, nested := sf["sequence"]; nested {
			p.fail(sn, key, CodeSequence, "sequence step %d: a sequence cannot be nested", i+1)
			continue
		}
		if r := p.response(key, sf, resolve(c)); r != nil {
			if _, ok := sf["delay"]; !ok { // the route's delay applies to steps without their own
				if dn, ok := f["delay"]; ok {
					r.delay, _ = p.delay(dn, key)
				}
			}
			steps = append(steps, r)
		}
	}
	if len(steps) != len(seqNode.Content) {
		return nil
	}
	counter := new(atomic.Int64)
	p.set.seqs = append(p.set.seqs, counter)
	return sequenceHandler(steps, counter)
}

// response compiles one response spec.
func (p *parser) response(key string, f map[string]*yaml.Node, at *yaml.Node) *response {
	r := &response{status: 200}
	ok := true
	templating := true
	if n, has := f["templating"]; has {
		templating, _ = p.boolean(n, key, "templating")
	}
	if n, has := f["status"]; has {
		s, good := p.integer(n, key, "status")
		if good && (s < 100 || s > 599) {
			p.fail(n, key, CodeStatus, "status %d is not an HTTP status (100–599)", s)
			good = false
		}
		ok = ok && good
		r.status = s
	}
	if n, has := f["statusText"]; has {
		r.statusText, _ = p.str(n, key, "statusText")
	}
	if n, has := f["delay"]; has {
		d, good := p.delay(n, key)
		ok = ok && good
		r.delay = d
		if d.IsRange() {
			p.dynamic = true
		}
	}
	if n, has := f["headers"]; has {
		m, order := p.headerMap(n, key, "headers", "header")
		for _, name := range order {
			hv := m[name]
			h := header{name: name, static: hv.Value}
			if templating && hasTemplate(hv.Value) {
				t, err := p.parseTemplate(key, hv.Value)
				if err != nil {
					p.fail(hv, key, CodeTemplate, "header %s: %v", name, cleanTemplateErr(key, err))
					ok = false
					continue
				}
				h.t = t
			}
			r.headers = append(r.headers, h)
		}
	}
	dn, hasData := f["data"]
	bn, hasBody := f["body"]
	gn, hasGen := f["generate"]
	switch {
	case hasData && hasGen:
		p.fail(gn, key, CodeConflict, "data and generate exclude each other")
		return nil
	case hasData && hasBody:
		p.fail(bn, key, CodeConflict, "data and body exclude each other")
		return nil
	case hasBody && hasGen:
		p.fail(gn, key, CodeConflict, "body and generate exclude each other")
		return nil
	case hasData:
		t := p.tree(key, dn, templating)
		if t == nil {
			return nil
		}
		r.data = t.collapse()
	case hasBody:
		s, good := p.str(bn, key, "body")
		if !good {
			return nil
		}
		if templating && hasTemplate(s) {
			t, err := p.parseTemplate(key, s)
			if err != nil {
				p.fail(bn, key, CodeTemplate, "body: %v", cleanTemplateErr(key, err))
				return nil
			}
			r.body = t
		} else {
			r.rawBody = []byte(s)
		}
	case hasGen:
		p.dynamic = true
		v := p.generate(key, gn)
		if v == nil {
			return nil
		}
		r.data = v
	}
	r.finish()
	if !ok {
		return nil
	}
	return r
}

// tree compiles a data value.
func (p *parser) tree(key string, n *yaml.Node, templating bool) *tree {
	n = resolve(n)
	switch n.Kind {
	case yaml.MappingNode:
		t := &tree{isObj: true}
		index := map[string]int{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Tag == "!!merge" {
				mv := resolve(v)
				if mv.Kind == yaml.MappingNode {
					sub := p.tree(key, mv, templating)
					if sub == nil {
						return nil
					}
					for j, kk := range sub.keys {
						if _, dup := index[string(kk)]; !dup {
							index[string(kk)] = len(t.keys)
							t.keys = append(t.keys, kk)
							t.vals = append(t.vals, sub.vals[j])
						}
					}
				}
				continue
			}
			c := p.tree(key, v, templating)
			if c == nil {
				return nil
			}
			kb := append(appendString(nil, k.Value), ':')
			if j, dup := index[string(kb)]; dup {
				t.vals[j] = c
				continue
			}
			index[string(kb)] = len(t.keys)
			t.keys = append(t.keys, kb)
			t.vals = append(t.vals, c.collapse())
		}
		return t
	case yaml.SequenceNode:
		t := &tree{isArr: true}
		for _, c := range n.Content {
			ct := p.tree(key, c, templating)
			if ct == nil {
				return nil
			}
			t.items = append(t.items, ct.collapse())
		}
		return t
	case yaml.ScalarNode:
		if templating && n.Tag == "!!str" && hasTemplate(n.Value) {
			tm, err := p.parseTemplate(key, n.Value)
			if err != nil {
				p.fail(n, key, CodeTemplate, "data: %v", cleanTemplateErr(key, err))
				return nil
			}
			return &tree{t: tm}
		}
		var v any
		if err := n.Decode(&v); err != nil {
			p.fail(n, key, CodeType, "data: %v", err)
			return nil
		}
		if _, isTime := v.(time.Time); isTime { // an unquoted date stays as written
			v = n.Value
		}
		t, err := constTree(v)
		if err != nil {
			p.fail(n, key, CodeType, "data: %v", err)
			return nil
		}
		return t
	}
	p.fail(n, key, CodeType, "data holds an unsupported YAML node")
	return nil
}

// Generate kinds of the generate: shorthand.
var generateKinds = []string{"user", "product", "address", "uuid", "name", "email", "phone"}

// generate builds the generate: {kind, count, seed} shorthand: records generated once at load
// (seeded by the route key unless seed is given, so answers stay stable across requests and
// reloads), a single record without count, an array with it.
func (p *parser) generate(key string, n *yaml.Node) *tree {
	f := p.fields(n, key, "generate", "kind", "count", "seed")
	if f == nil {
		return nil
	}
	kn, has := f["kind"]
	if !has {
		p.fail(n, key, CodeGenerate, "generate needs a kind: one of %s", strings.Join(generateKinds, ", "))
		return nil
	}
	kind, ok := p.str(kn, key, "generate.kind")
	if !ok {
		return nil
	}
	if !slices.Contains(generateKinds, kind) {
		p.fail(kn, key, CodeGenerate, "unknown generate kind %q: one of %s", kind, strings.Join(generateKinds, ", "))
		return nil
	}
	count := -1
	if cn, has := f["count"]; has {
		c, ok := p.integer(cn, key, "generate.count")
		if !ok {
			return nil
		}
		if c < 0 || c > 10000 {
			p.fail(cn, key, CodeGenerate, "generate.count must be between 0 and 10000")
			return nil
		}
		count = c
	}
	h := fnv.New64a()
	h.Write([]byte(key))
	seed := h.Sum64()
	if sn, has := f["seed"]; has {
		s, ok := p.integer(sn, key, "generate.seed")
		if !ok {
			return nil
		}
		seed = uint64(s)
	}
	g := mock.NewGenerator(seed)
	one := func(int) any {
		switch kind {
		case "user":
			return g.User(mock.User{})
		case "product":
			return g.Product(mock.Product{})
		case "address":
			return g.Address(mock.Address{})
		case "uuid":
			return g.UUID()
		case "name":
			return g.Name()
		case "email":
			return g.Email()
		default:
			return g.Phone()
		}
	}
	var v any
	if count < 0 {
		v = one(0)
	} else {
		v = mock.Array(count, one)
	}
	t, err := constTree(v)
	if err != nil {
		p.fail(n, key, CodeGenerate, "%v", err)
		return nil
	}
	return t
}

// validateRoutes runs the mock package's validator over the route keys, with their lines.
func (p *parser) validateRoutes() {
	lines := map[string]int{}
	defs := mock.Definitions{}
	for _, r := range p.set.Routes {
		lines[r.Key] = r.Line
		h := r.Handler
		if h == nil { // already reported; keep the key checked
			h = mock.JSON(200, nil)
		}
		defs[r.Key] = h
	}
	res := mock.ValidateDefinitions(defs)
	for _, e := range res.Errors {
		p.errs = append(p.errs, Problem{Route: e.Route, Line: lines[e.Route], Code: e.Code, Message: e.Message, Severity: mock.SeverityError})
	}
	for _, e := range res.Warnings {
		p.warns = append(p.warns, Problem{Route: e.Route, Line: lines[e.Route], Code: e.Code, Message: e.Message, Severity: mock.SeverityWarning})
	}
}

// cleanTemplateErr drops text/template's "template: NAME:" prefix, which repeats the route.
func cleanTemplateErr(key string, err error) string {
	return "template: " + strings.TrimPrefix(err.Error(), "template: "+key+":")
}

// JSONValue returns v, a value decoded from YAML into an any, in a form encoding/json can
// encode: YAML allows mapping keys that are not strings (a status code such as 200), which
// decode into map[any]any; those maps become map[string]any, keys printed with fmt.Sprint.
// Maps and slices are converted in place, at any depth; other values are returned as they are.
func JSONValue(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, vv := range x {
			x[k] = JSONValue(vv)
		}
		return x
	case map[any]any:
		m := make(map[string]any, len(x))
		for k, vv := range x {
			m[fmt.Sprint(k)] = JSONValue(vv)
		}
		return m
	case []any:
		for i, vv := range x {
			x[i] = JSONValue(vv)
		}
		return x
	default:
		return v
	}
}
