package openapi

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/acme/app/mock"
)

// checker finds what makes a description impossible to serve as written: references that
// lead nowhere, parameters in no location, responses that are not status codes, security
// requirements naming no scheme. Each problem carries its file, line and JSON pointer.
type checker struct {
	s        *Spec
	problems []Problem
}

func (c *checker) add(l loc, msg string) {
	p := Problem{Line: l.line(), Pointer: l.ptr, Message: msg}
	if l.d != nil && l.d != c.s.main {
		p.File = l.d.path
	}
	c.problems = append(c.problems, p)
}

func (c *checker) addAt(l loc, key, msg string) {
	p := Problem{Line: l.obj().lineOf(key), Pointer: l.ptr + "/" + escapeToken(key), Message: msg}
	if l.d != nil && l.d != c.s.main {
		p.File = l.d.path
	}
	c.problems = append(c.problems, p)
}

var (
	responseCode = regexp.MustCompile(`^([1-5][0-9][0-9]|[1-5][Xx][Xx]|default)$`)
	schemaTypes  = []string{"string", "number", "integer", "boolean", "array", "object", "null"}
	paramIn      = []string{"query", "header", "path", "cookie"}
)

func (c *checker) run() {
	s := c.s
	root := loc{d: s.main, v: s.main.root}
	ro := root.obj()
	if ro == nil {
		c.add(root, "the description is not a mapping")
		return
	}
	version := ro.str("openapi")
	switch {
	case ro.str("swagger") != "":
		c.addAt(root, "swagger", "Swagger (OpenAPI 2.0) is not served: convert it to OpenAPI 3")
		return
	case !strings.HasPrefix(version, "3.0") && !strings.HasPrefix(version, "3.1"):
		c.addAt(root, "openapi", fmt.Sprintf("openapi %q: want a 3.0.x or 3.1.x description", version))
		return
	}
	if ro.object("info") == nil {
		c.addAt(root, "info", "info is missing or not a mapping")
	}
	for _, d := range s.docs {
		c.refs(loc{d: d, v: d.root}, 0)
	}
	paths := root.child("paths")
	if _, ok := ro.get("paths"); ok && paths.obj() == nil {
		c.addAt(root, "paths", "paths is not a mapping")
	}
	if _, ok := ro.get("paths"); !ok && !strings.HasPrefix(version, "3.1") {
		c.addAt(root, "openapi", "paths is missing")
	}
	schemes := root.child("components").child("securitySchemes")
	for _, k := range schemes.obj().keysOrNil() {
		c.scheme(s.res(schemes.child(k)))
	}
	c.security(root.child("security"), schemes)
	for _, p := range paths.obj().keysOrNil() {
		if !strings.HasPrefix(p, "/") {
			c.addAt(paths, p, fmt.Sprintf("path %q does not start with /", p))
		} else if why := unservable(p); why != "" {
			c.addAt(paths, p, why)
		}
		item := s.res(paths.child(p))
		if item.obj() == nil {
			c.addAt(paths, p, "a path item must be a mapping")
			continue
		}
		c.parameters(item.child("parameters"))
		for _, m := range methods {
			op := item.child(m)
			if op.v == nil {
				continue
			}
			if op.obj() == nil {
				c.addAt(item, m, "an operation must be a mapping")
				continue
			}
			c.parameters(op.child("parameters"))
			c.security(op.child("security"), schemes)
			if rb := s.res(op.child("requestBody")); rb.v != nil && rb.obj().object("content") == nil {
				c.add(rb, "a request body needs content")
			}
			c.responses(op)
		}
	}
}

// unservable says why the interceptor would refuse the route of path p (a space, a query or
// a fragment in it, in the interceptor's words), or returns "".
func unservable(p string) string {
	rp, _, _ := routePath(p)
	if v := mock.ValidateRoutePattern("GET " + rp); !v.Valid {
		return v.Errors[0].Message
	}
	return ""
}

// refs checks that every reference in a file leads somewhere, and that every schema type is
// one JSON Schema knows.
func (c *checker) refs(l loc, depth int) {
	if depth > 512 {
		return
	}
	switch x := l.v.(type) {
	case *obj:
		if ref, ok := x.vals["$ref"]; ok {
			str, isStr := ref.(string)
			if !isStr {
				c.addAt(l, "$ref", "$ref must be a string")
			} else if _, err := c.s.resolve(l); err != nil {
				c.addAt(l, "$ref", err.Error())
			} else if _, err := target(c.s.docs, l.d, str); err != nil {
				c.addAt(l, "$ref", err.Error())
			}
		}
		if t, ok := x.vals["type"]; ok && (x.object("properties") != nil || x.vals["items"] != nil || x.vals["format"] != nil || x.vals["enum"] != nil || isTypeList(t)) {
			c.types(l, t)
		}
		for _, k := range x.keys {
			c.refs(l.child(k), depth+1)
		}
	case []any:
		for i := range x {
			c.refs(l.index(i), depth+1)
		}
	}
}

func isTypeList(v any) bool { _, ok := v.([]any); return ok }

func (c *checker) types(l loc, t any) {
	check := func(v any) {
		s, _ := v.(string)
		if !slices.Contains(schemaTypes, s) {
			c.addAt(l, "type", fmt.Sprintf("type %v is not one of %s", v, strings.Join(schemaTypes, ", ")))
		}
	}
	if list, ok := t.([]any); ok {
		for _, v := range list {
			check(v)
		}
		return
	}
	if s, ok := t.(string); ok && s == "null" && !c.s.v31Root() {
		c.addAt(l, "type", `type "null" needs OpenAPI 3.1 (3.0 has nullable: true)`)
		return
	}
	check(t)
}

// v31Root reports whether the main document says 3.1 (before build sets v31).
func (s *Spec) v31Root() bool {
	return strings.HasPrefix(loc{d: s.main, v: s.main.root}.obj().str("openapi"), "3.1")
}

func (c *checker) parameters(l loc) {
	if l.v == nil {
		return
	}
	list, ok := l.v.([]any)
	if !ok {
		c.add(l, "parameters must be a list")
		return
	}
	for i := range list {
		p := c.s.res(l.index(i))
		o := p.obj()
		if o == nil {
			c.add(l.index(i), "a parameter must be a mapping")
			continue
		}
		name, in := o.str("name"), o.str("in")
		if name == "" {
			c.addAt(p, "name", "a parameter needs a name")
		}
		if !slices.Contains(paramIn, in) {
			c.addAt(p, "in", fmt.Sprintf("parameter %q: in %q is not one of %s", name, in, strings.Join(paramIn, ", ")))
		}
		if in == "path" && !o.boolean("required") {
			c.addAt(p, "required", fmt.Sprintf("path parameter %q must say required: true", name))
		}
		_, hasSchema := o.get("schema")
		_, hasContent := o.get("content")
		if hasSchema && hasContent {
			c.addAt(p, "content", fmt.Sprintf("parameter %q: schema and content exclude each other", name))
		}
	}
}

func (c *checker) responses(op loc) {
	rl := op.child("responses")
	ro := rl.obj()
	if ro == nil {
		if _, ok := op.obj().get("responses"); ok || !c.s.v31Root() {
			c.addAt(op, "responses", "an operation needs responses (a mapping of status codes)")
		}
		return
	}
	for _, code := range ro.keys {
		if !responseCode.MatchString(code) {
			c.addAt(rl, code, fmt.Sprintf("response %q is not a status code (100-599, 4XX) or default", code))
		}
		r := c.s.res(rl.child(code))
		if r.obj() == nil {
			c.addAt(rl, code, "a response must be a mapping")
		}
	}
}

func (c *checker) security(l loc, schemes loc) {
	list, ok := l.v.([]any)
	if l.v == nil {
		return
	}
	if !ok {
		c.add(l, "security must be a list of requirements")
		return
	}
	for i := range list {
		req := l.index(i).obj()
		for _, name := range req.keysOrNil() {
			if schemes.obj().object(name) == nil {
				c.addAt(l.index(i), name, fmt.Sprintf("security scheme %q is not defined in components.securitySchemes", name))
			}
		}
	}
}

func (c *checker) scheme(l loc) {
	o := l.obj()
	if o == nil {
		c.add(l, "a security scheme must be a mapping")
		return
	}
	switch t := o.str("type"); t {
	case "apiKey":
		if o.str("name") == "" || !slices.Contains([]string{"query", "header", "cookie"}, o.str("in")) {
			c.add(l, "an apiKey scheme needs a name and in: query, header or cookie")
		}
	case "http":
		if o.str("scheme") == "" {
			c.add(l, "an http scheme needs a scheme (bearer, basic, …)")
		}
	case "oauth2", "openIdConnect", "mutualTLS":
	default:
		c.addAt(l, "type", fmt.Sprintf("security scheme type %q is not apiKey, http, oauth2, openIdConnect or mutualTLS", t))
	}
}
