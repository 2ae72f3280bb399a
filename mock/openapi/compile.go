package openapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

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
// form, and readOnly properties are no longer required (a client does not send them).
type compiler struct {
	s     *Spec
	c     *jsonschema.Compiler
	added bool
	err   error
}

func newCompiler(s *Spec) *compiler {
	jc := jsonschema.NewCompiler()
	jc.DefaultDraft(jsonschema.Draft2020)
	jc.AssertFormat()
	jc.UseLoader(refuseLoader{})
	return &compiler{s: s, c: jc}
}

// refuseLoader loads nothing: every file the description references is added up front, and
// nothing else may be read or fetched.
type refuseLoader struct{}

func (refuseLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("%s is not part of the description", url)
}

// addResources gives the compiler every file, rewritten for requests.
func (cc *compiler) addResources() error {
	if cc.added {
		return cc.err
	}
	cc.added = true
	for _, d := range cc.s.docs {
		doc := plain(d.root, cc.fixer(d))
		if err := cc.c.AddResource(d.url, doc); err != nil {
			cc.err = err
			return err
		}
	}
	return nil
}

// fixer rewrites one mapping of document d for request validation.
func (cc *compiler) fixer(d *document) func(o *obj, m map[string]any) {
	v30 := !cc.s.v31
	return func(o *obj, m map[string]any) {
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

// compile compiles the schema at l (a reference is followed by the compiler itself). A
// schema that does not compile is a problem of the description.
func (cc *compiler) compile(c *checker, l loc) *jsonschema.Schema {
	if err := cc.addResources(); err != nil {
		c.add(l, "cannot prepare the schemas: "+err.Error())
		return nil
	}
	sch, err := cc.c.Compile(l.d.url + "#" + l.ptr)
	if err != nil {
		msg := err.Error()
		var se *jsonschema.SchemaValidationError
		if errors.As(err, &se) && se.Err != nil {
			msg = "not a valid schema: " + se.Err.Error()
		}
		c.add(l, msg)
		return nil
	}
	return sch
}
