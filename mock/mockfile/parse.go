package mockfile

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
	"golang.org/x/net/http/httpguts"

	"github.com/acme/app/mock"
)

type parser struct {
	set   *Set
	errs  []Problem
	warns []Problem
	base  string // the file's directory, absolute: config.persistence.dir stays inside it

	// Of the route being read: whether its answers change from call to call (a sequence,
	// generated data, a delay range), and its cache field when it has one.
	dynamic bool
	cache   *bool
}

// parseTemplate compiles a template of the route being read, noting generator calls.
func (p *parser) parseTemplate(key, text string) (*tmpl, error) {
	t, err := parseTemplate(key, text)
	if err == nil && t.generates {
		p.dynamic = true
	}
	return t, err
}

func (p *parser) fail(n *yaml.Node, route, code, format string, args ...any) {
	pr := Problem{Route: route, Code: code, Message: fmt.Sprintf(format, args...), Severity: mock.SeverityError}
	if n != nil {
		pr.Line = n.Line
	}
	p.errs = append(p.errs, pr)
}

// resolve follows YAML aliases (*anchor).
func resolve(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n
}

// fields returns a mapping's values by key, reporting keys outside known (typos) and a node
// that is not a mapping.
func (p *parser) fields(n *yaml.Node, route, what string, known ...string) map[string]*yaml.Node {
	n = resolve(n)
	if n.Kind != yaml.MappingNode {
		if n.Tag == "!!null" {
			return map[string]*yaml.Node{}
		}
		p.fail(n, route, CodeType, "%s must be a mapping", what)
		return nil
	}
	out := make(map[string]*yaml.Node, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Tag == "!!merge" { // <<: *anchor
			for kk, vv := range p.fields(v, route, what, known...) {
				if _, ok := out[kk]; !ok {
					out[kk] = vv
				}
			}
			continue
		}
		if !slices.Contains(known, k.Value) {
			hint := ""
			if s := closest(k.Value, known); s != "" {
				hint = fmt.Sprintf(" (did you mean %q?)", s)
			}
			p.fail(k, route, CodeUnknownKey, "unknown field %q in %s%s; known: %s", k.Value, what, hint, strings.Join(known, ", "))
			continue
		}
		out[k.Value] = v
	}
	return out
}

// closest returns the known key nearest to s when it is a likely typo.
func closest(s string, known []string) string {
	best, bestD := "", 3
	for _, k := range known {
		if d := mock.EditDistance(strings.ToLower(s), strings.ToLower(k)); d < bestD {
			best, bestD = k, d
		}
	}
	return best
}

func (p *parser) str(n *yaml.Node, route, what string) (string, bool) {
	n = resolve(n)
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		p.fail(n, route, CodeType, "%s must be a string", what)
		return "", false
	}
	return n.Value, true
}

func (p *parser) boolean(n *yaml.Node, route, what string) (bool, bool) {
	n = resolve(n)
	var b bool
	if n.Kind != yaml.ScalarNode || n.Tag != "!!bool" || n.Decode(&b) != nil {
		p.fail(n, route, CodeType, "%s must be true or false", what)
		return false, false
	}
	return b, true
}

func (p *parser) integer(n *yaml.Node, route, what string) (int, bool) {
	n = resolve(n)
	var i int
	if n.Kind != yaml.ScalarNode || n.Tag != "!!int" || n.Decode(&i) != nil {
		p.fail(n, route, CodeType, "%s must be an integer", what)
		return 0, false
	}
	return i, true
}

func (p *parser) strMap(n *yaml.Node, route, what string) (map[string]*yaml.Node, []string) {
	n = resolve(n)
	if n.Kind != yaml.MappingNode {
		p.fail(n, route, CodeType, "%s must be a mapping of names to strings", what)
		return nil, nil
	}
	out := map[string]*yaml.Node{}
	var order []string
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], resolve(n.Content[i+1])
		if v.Kind != yaml.ScalarNode || v.Tag == "!!null" {
			p.fail(v, route, CodeType, "%s %q must be a string", what, k.Value)
			continue
		}
		if _, dup := out[k.Value]; !dup {
			order = append(order, k.Value)
		}
		out[k.Value] = v
	}
	return out, order
}

// headerMap reads a mapping of header names to values (what names the mapping in messages,
// label one of its headers). A name HTTP does not allow, or a value holding a line break or a
// NUL, is a problem: the server would drop such a header, or change its value, without a word.
func (p *parser) headerMap(n *yaml.Node, route, what, label string) (map[string]*yaml.Node, []string) {
	m, order := p.strMap(n, route, what)
	n = resolve(n)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], resolve(n.Content[i+1])
		if !httpguts.ValidHeaderFieldName(k.Value) {
			p.fail(k, route, CodeHeader, "%s name %q is not a valid HTTP header name (letters, digits and !#$%%&'*+-.^_`|~, no spaces or colons)", label, k.Value)
		} else if v.Kind == yaml.ScalarNode && strings.ContainsAny(v.Value, "\r\n\x00") {
			p.fail(v, route, CodeHeader, "%s %s: the value holds a line break or NUL, which HTTP does not allow in a header", label, k.Value)
		}
	}
	return m, order
}

// ParseDelay reads a delay: milliseconds ("200"), a range ("100-400"), or a Go duration
// ("250ms", "1s").
func ParseDelay(s string) (mock.Delay, error) {
	s = strings.TrimSpace(s)
	if lo, hi, ok := strings.Cut(s, "-"); ok && lo != "" {
		a, err1 := parseMS(lo)
		b, err2 := parseMS(hi)
		if err1 != nil || err2 != nil {
			return mock.Delay{}, fmt.Errorf("delay %q: want milliseconds or a range like 100-400", s)
		}
		if b < a {
			return mock.Delay{}, fmt.Errorf("delay %q: the maximum is below the minimum", s)
		}
		return mock.Between(a, b), nil
	}
	d, err := parseMS(s)
	if err != nil {
		return mock.Delay{}, fmt.Errorf("delay %q: want milliseconds or a range like 100-400", s)
	}
	return mock.Fixed(d), nil
}

func parseMS(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if n, err := strconv.Atoi(s); err == nil {
		if n < 0 {
			return 0, errors.New("negative")
		}
		return time.Duration(n) * time.Millisecond, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, errors.New("bad duration")
	}
	return d, nil
}

func (p *parser) delay(n *yaml.Node, route string) (mock.Delay, bool) {
	n = resolve(n)
	switch n.Kind {
	case yaml.ScalarNode:
		d, err := ParseDelay(n.Value)
		if err != nil {
			p.fail(n, route, CodeDelay, "%v", err)
			return mock.Delay{}, false
		}
		return d, true
	case yaml.SequenceNode:
		if len(n.Content) == 2 {
			a, err1 := parseMS(resolve(n.Content[0]).Value)
			b, err2 := parseMS(resolve(n.Content[1]).Value)
			if err1 == nil && err2 == nil && b >= a {
				return mock.Between(a, b), true
			}
		}
	}
	p.fail(n, route, CodeDelay, "delay must be milliseconds (200), a range (\"100-400\" or [100, 400]) or a duration (\"250ms\")")
	return mock.Delay{}, false
}
