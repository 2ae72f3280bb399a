package openapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/pb33f/jsonschema/v6"
)

// marshal encodes v as JSON without escaping <, > and &.
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// compiler compiles the description's schemas for request validation. Every file of the
// description is a resource of one JSON Schema compiler, rewritten for requests first:
// 3.0's nullable becomes a type list and its boolean exclusiveMinimum/Maximum the numeric
// form, readOnly properties are no longer required (a client does not send them), and every
// $ref names its target by absolute URL. The schemas of parameters and bodies are gathered
// under the $defs of one more resource and compiled from there: a schema at a place JSON
// Schema does not know (deep in paths) costs the compiler a copy of its whole index, once per
// place, which a description of thousands of operations turns into seconds.
type compiler struct {
	s    *Spec
	c    *jsonschema.Compiler
	defs map[string]any
	dsts []compileDst
}

// compileDst is a schema to compile and where its result goes.
type compileDst struct {
	l   loc
	dst **jsonschema.Schema
}

// requestsURL names the resource holding the schemas of parameters and bodies.
const requestsURL = "file:///openapi-mock/requests.json"

func newCompiler(s *Spec) *compiler {
	jc := jsonschema.NewCompiler()
	jc.DefaultDraft(jsonschema.Draft2020)
	jc.AssertFormat()
	jc.UseLoader(refuseLoader{})
	jc.UseRegexpEngine(compilePattern)
	return &compiler{s: s, c: jc, defs: map[string]any{}}
}

// refuseLoader loads nothing: every file the description references is added up front, and
// nothing else may be read or fetched.
type refuseLoader struct{}

func (refuseLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("%s is not part of the description", url)
}

// fixer rewrites one mapping of document d for request validation.
func (cc *compiler) fixer(d *document) func(o *obj, m map[string]any) {
	v30 := !cc.s.v31
	return func(o *obj, m map[string]any) {
		if ref, ok := m["$ref"].(string); ok {
			m["$ref"] = absoluteRef(d, ref)
		}
		if v30 {
			if b, ok := m["nullable"].(bool); ok && b {
				switch t := m["type"].(type) {
				case string:
					m["type"] = []any{t, "null"}
				}
				if e, ok := m["enum"].([]any); ok {
					m["enum"] = append(e, nil)
				}
			}
			for _, kw := range [2][2]string{{"exclusiveMinimum", "minimum"}, {"exclusiveMaximum", "maximum"}} {
				if b, ok := m[kw[0]].(bool); ok {
					delete(m, kw[0])
					if n, has := m[kw[1]]; b && has {
						m[kw[0]] = n
						delete(m, kw[1])
					}
				}
			}
		}
		req, ok := m["required"].([]any)
		props := o.object("properties")
		if !ok || props == nil {
			return
		}
		keep := req[:0:0]
		for _, n := range req {
			name, _ := n.(string)
			pv, has := props.get(name)
			if has {
				if r, err := cc.s.resolve(loc{d: d, v: pv}); err == nil && r.obj().boolean("readOnly") {
					continue
				}
			}
			keep = append(keep, n)
		}
		m["required"] = keep
	}
}

// absoluteRef turns a reference written in d into the URL of its target.
func absoluteRef(d *document, ref string) string {
	file, frag, hasFrag := strings.Cut(ref, "#")
	base := d.url
	if file != "" {
		abs := filepath.Join(filepath.Dir(d.path), filepath.FromSlash(file))
		base = fileURL(abs)
	}
	if !hasFrag {
		return base
	}
	return base + "#" + frag
}

// fileURL is the file: URL of an absolute path, on every platform.
func fileURL(abs string) string {
	p := filepath.ToSlash(abs)
	if !strings.HasPrefix(p, "/") {
		p = "/" + p // C:/x → /C:/x
	}
	return (&url.URL{Scheme: "file", Path: p}).String()
}

// compile asks for the schema at l to be compiled into *dst by finish.
func (cc *compiler) compile(l loc, dst **jsonschema.Schema) {
	cc.dsts = append(cc.dsts, compileDst{l: l, dst: dst})
}

// finish compiles every schema asked for. One that does not compile is a problem of the
// description, reported at its place.
func (cc *compiler) finish(c *checker) {
	if len(cc.dsts) == 0 {
		return
	}
	for _, d := range cc.s.docs {
		if err := cc.c.AddResource(d.url, plain(d.root, cc.fixer(d))); err != nil {
			c.add(loc{d: d, v: d.root}, "cannot prepare the schemas: "+err.Error())
			return
		}
	}
	defs := make(map[string]any, len(cc.dsts))
	for i, cd := range cc.dsts {
		defs[strconv.Itoa(i)] = plain(cd.l.v, cc.fixer(cd.l.d))
	}
	if err := cc.c.AddResource(requestsURL, map[string]any{"$defs": defs}); err != nil {
		c.add(loc{d: cc.s.main, v: cc.s.main.root}, "cannot prepare the schemas: "+err.Error())
		return
	}
	for i, cd := range cc.dsts {
		sch, err := cc.c.Compile(requestsURL + "#/$defs/" + strconv.Itoa(i))
		if err != nil {
			c.add(cd.l, strings.ReplaceAll(schemaError(err), requestsURL+"#/$defs/"+strconv.Itoa(i), "this schema"))
			continue
		}
		*cd.dst = sch
	}
}

// schemaError words why a schema does not compile: the innermost failures, each at its
// keyword ("pattern: '(x' is not valid regex"), rather than the validator's whole tree.
func schemaError(err error) string {
	var se *jsonschema.SchemaValidationError
	var ve *jsonschema.ValidationError
	if !errors.As(err, &se) || !errors.As(se.Err, &ve) {
		return err.Error()
	}
	var msgs []string
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			at := e.InstanceLocation
			if len(at) >= 2 && at[0] == "$defs" {
				at = at[2:]
			}
			msg := e.ErrorKind.LocalizedString(printer)
			if len(at) > 0 {
				msg = strings.Join(at, "/") + ": " + msg
			}
			msgs = append(msgs, msg)
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	return "not a valid schema: " + strings.Join(msgs, "; ")
}
