package mockfile

import (
	"encoding/json"
	"fmt"
	"unicode/utf8"
)

// tree is a compiled JSON value: a constant (pre-encoded), a template string, an object or an
// array. Subtrees without templates are collapsed into constants at compile time, so a
// static body costs one copy per request.
type tree struct {
	static []byte   // constant JSON, when t, keys and items are nil
	t      *tmpl    // a string rendered per request
	keys   [][]byte // object keys, JSON-encoded with the colon: "id":
	vals   []*tree  // object values, in file order
	items  []*tree  // array items
	isObj  bool
	isArr  bool
}

func (n *tree) isStatic() bool { return n.t == nil && !n.isObj && !n.isArr }

// collapse turns a subtree without templates into a constant.
func (n *tree) collapse() *tree {
	if n.isStatic() {
		return n
	}
	if n.t != nil {
		return n
	}
	all := true
	for _, c := range n.vals {
		all = all && c.isStatic()
	}
	for _, c := range n.items {
		all = all && c.isStatic()
	}
	if !all {
		return n
	}
	b, _ := n.appendJSON(nil, nil)
	return &tree{static: b}
}

// appendJSON renders the tree over v (nil only for constant trees) and appends its JSON.
func (n *tree) appendJSON(dst []byte, v *reqView) ([]byte, error) {
	switch {
	case n.t != nil:
		s, err := n.t.exec(v)
		if err != nil {
			return dst, err
		}
		return appendString(dst, s), nil
	case n.isObj:
		dst = append(dst, '{')
		for i, k := range n.keys {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, k...)
			var err error
			if dst, err = n.vals[i].appendJSON(dst, v); err != nil {
				return dst, err
			}
		}
		return append(dst, '}'), nil
	case n.isArr:
		dst = append(dst, '[')
		for i, c := range n.items {
			if i > 0 {
				dst = append(dst, ',')
			}
			var err error
			if dst, err = c.appendJSON(dst, v); err != nil {
				return dst, err
			}
		}
		return append(dst, ']'), nil
	default:
		return append(dst, n.static...), nil
	}
}

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string.
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
			i++
			continue
		}
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				dst = append(dst, s[start:i]...)
				dst = append(dst, `\ufffd`...)
				i += size
				start = i
				continue
			}
			i += size
			continue
		}
		dst = append(dst, s[start:i]...)
		switch c {
		case '"', '\\':
			dst = append(dst, '\\', c)
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		default:
			dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
		}
		i++
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// constTree returns a constant tree holding v encoded as JSON.
func constTree(v any) (*tree, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode as JSON: %w", err)
	}
	return &tree{static: b}, nil
}
