package openapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// obj is a mapping of the description with its keys in document order and the line of each
// value, so "the first example" and "the first response" mean what the author wrote, and a
// problem can be reported at its line.
type obj struct {
	keys  []string
	vals  map[string]any
	lines map[string]int
	line  int
}

func (o *obj) get(k string) (any, bool) {
	if o == nil {
		return nil, false
	}
	v, ok := o.vals[k]
	return v, ok
}

// str returns the string under k, or "".
func (o *obj) str(k string) string {
	v, _ := o.get(k)
	s, _ := v.(string)
	return s
}

// object returns the mapping under k, or nil.
func (o *obj) object(k string) *obj {
	v, _ := o.get(k)
	m, _ := v.(*obj)
	return m
}

// boolean returns the boolean under k, or false.
func (o *obj) boolean(k string) bool {
	v, _ := o.get(k)
	b, _ := v.(bool)
	return b
}

// lineOf is the line of k's value, else the mapping's own line.
func (o *obj) lineOf(k string) int {
	if l := o.lines[k]; l > 0 {
		return l
	}
	return o.line
}

// MarshalJSON writes the mapping with its keys in document order.
func (o *obj) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range o.keys {
		if i > 0 {
			b.WriteByte(',')
		}
		kb, _ := json.Marshal(k)
		b.Write(kb)
		b.WriteByte(':')
		vb, err := json.Marshal(o.vals[k])
		if err != nil {
			return nil, err
		}
		b.Write(vb)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// maxNodes bounds the values one description may hold (aliases included), so a small file
// of YAML aliases cannot expand into gigabytes.
const maxNodes = 4 << 20

var errTooLarge = errors.New("the description is too large (more than 4M values once aliases are expanded)")

// converter turns a YAML node tree into obj, []any and scalars.
type converter struct{ n int }

func (c *converter) value(n *yaml.Node, depth int) (any, error) {
	c.n++
	if c.n > maxNodes {
		return nil, errTooLarge
	}
	if depth > 256 {
		return nil, fmt.Errorf("line %d: values nest deeper than 256 levels", n.Line)
	}
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return nil, nil
		}
		return c.value(n.Content[0], depth)
	case yaml.AliasNode:
		if n.Alias == nil {
			return nil, nil
		}
		return c.value(n.Alias, depth+1)
	case yaml.MappingNode:
		o := &obj{vals: make(map[string]any, len(n.Content)/2), lines: make(map[string]int, len(n.Content)/2), line: n.Line}
		for i := 0; i+1 < len(n.Content); i += 2 {
			kn, vn := n.Content[i], n.Content[i+1]
			if kn.Tag == "!!merge" {
				continue
			}
			k := kn.Value
			v, err := c.value(vn, depth+1)
			if err != nil {
				return nil, err
			}
			if _, dup := o.vals[k]; !dup {
				o.keys = append(o.keys, k)
			}
			o.vals[k] = v
			o.lines[k] = kn.Line
		}
		return o, nil
	case yaml.SequenceNode:
		a := make([]any, 0, len(n.Content))
		for _, e := range n.Content {
			v, err := c.value(e, depth+1)
			if err != nil {
				return nil, err
			}
			a = append(a, v)
		}
		return a, nil
	default:
		return scalar(n), nil
	}
}

// scalar decodes a YAML scalar as JSON would see it.
func scalar(n *yaml.Node) any {
	switch n.ShortTag() {
	case "!!null":
		return nil
	case "!!bool":
		var b bool
		if n.Decode(&b) == nil {
			return b
		}
	case "!!int":
		if i, err := strconv.ParseInt(n.Value, 0, 64); err == nil {
			return i
		}
		var f float64
		if n.Decode(&f) == nil {
			return f
		}
	case "!!float":
		var f float64
		if n.Decode(&f) == nil && !math.IsInf(f, 0) && !math.IsNaN(f) {
			return f
		}
	}
	return n.Value
}

// plain turns a tree into the map[string]any form of encoding/json (for the JSON Schema
// compiler), applying fix to every mapping on the way down.
func plain(v any, fix func(o *obj, m map[string]any)) any {
	switch x := v.(type) {
	case *obj:
		m := make(map[string]any, len(x.keys))
		for _, k := range x.keys {
			m[k] = plain(x.vals[k], fix)
		}
		if fix != nil {
			fix(x, m)
		}
		return m
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = plain(e, fix)
		}
		return out
	default:
		return v
	}
}

// escapeToken escapes one JSON pointer token.
func escapeToken(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// unescapeToken undoes escapeToken.
func unescapeToken(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~")
}

// lookup follows a JSON pointer ("/components/schemas/Pet") from v. It returns the value
// and the line of the mapping entry that holds it.
func lookup(v any, pointer string) (any, int, bool) {
	if pointer == "" {
		return v, 0, true
	}
	if !strings.HasPrefix(pointer, "/") {
		return nil, 0, false
	}
	line := 0
	for _, tok := range strings.Split(pointer[1:], "/") {
		tok = unescapeToken(tok)
		switch x := v.(type) {
		case *obj:
			nv, ok := x.vals[tok]
			if !ok {
				return nil, 0, false
			}
			line = x.lineOf(tok)
			v = nv
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(x) {
				return nil, 0, false
			}
			v = x[i]
		default:
			return nil, 0, false
		}
	}
	return v, line, true
}
