package mockfile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"text/template"
	"text/template/parse"
	"time"

	"github.com/acme/app/mock"
)

// funcMap is the generator's functions plus a few helpers, shared by every template.
var funcMap = sync.OnceValue(func() template.FuncMap {
	fm := mock.DefaultGenerator().FuncMap()
	fm["json"] = func(v any) (string, error) {
		b, err := json.Marshal(v)
		return string(b), err
	}
	fm["now"] = func() string { return time.Now().UTC().Format(time.RFC3339) }
	fm["default"] = func(def, v any) any {
		if v == nil || v == "" {
			return def
		}
		return v
	}
	fm["upper"] = strings.ToUpper
	fm["lower"] = strings.ToLower
	fm["trim"] = strings.TrimSpace
	return fm
})

// tmpl is one compiled template string. Strings made only of text and plain lookups
// ({{.Params.id}}, {{.Query.page}}, {{.Headers.Authorization}}) take a fast path that renders
// without text/template; anything else runs the template.
type tmpl struct {
	t    *template.Template // nil on the fast path
	segs []seg              // the fast path, when not nil
	// bodyField: the template reads a field of the body ({{.Body.email}}), which needs a
	// JSON object.
	bodyField bool
	// generates: the template calls a generator (uuid, name, int, now, …), so its answers
	// differ from call to call.
	generates bool
	// runs holds copies of t whose text-making functions count against a budget of their
	// own (*run): one render at a time uses a copy.
	runs sync.Pool
}

// run is a copy of a template whose text-making functions count against budget.
type run struct {
	t      *template.Template
	budget *renderBudget
}

// generatorFuncs are the template functions whose results change from call to call.
var generatorFuncs = sync.OnceValue(func() map[string]bool {
	m := map[string]bool{"now": true}
	for name := range mock.DefaultGenerator().FuncMap() {
		if name != "seq" {
			m[name] = true
		}
	}
	return m
})

// Bounds of one template run: a render larger than maxRender bytes, or still writing after
// renderTimeout, stops with an error (answered 500 HANDLER_EXECUTION_ERROR).
const maxRender = 10 << 20

var renderTimeout = 2 * time.Second

var (
	errRenderTooLarge = fmt.Errorf("the template's answer is over %d MB", maxRender>>20)
	errRenderTooSlow  = fmt.Errorf("the template ran longer than %s", renderTimeout)
	// errBodyNotObject: a template reads {{.Body.x}} but the request body is not a JSON object.
	errBodyNotObject = errors.New("the template reads a field of the request body, which is not a JSON object")
)

// boundedWriter is the render's buffer: it refuses bytes past maxRender or after the deadline.
type boundedWriter struct {
	buf      *bytes.Buffer
	deadline time.Time
}

func (w *boundedWriter) Write(p []byte) (int, error) {
	if w.buf.Len()+len(p) > maxRender {
		return 0, errRenderTooLarge
	}
	if time.Now().After(w.deadline) {
		return 0, errRenderTooSlow
	}
	return w.buf.Write(p)
}

// seg is one piece of a fast-path template: literal text, or a lookup in params (p), query
// (q) or headers (h).
type seg struct {
	src byte
	key string
}

var simpleAction = regexp.MustCompile(`^\{\{-?\s*\.(Params|Query|Headers)\.([A-Za-z_][A-Za-z0-9_]*)\s*-?\}\}`)

// textTemplate parses text as text/template runs it for a mock answer.
func textTemplate(name, text string) (*template.Template, error) {
	return template.New(name).Funcs(funcMap()).Option("missingkey=zero").Parse(text)
}

// parseTemplate compiles one template string.
func parseTemplate(name, text string) (*tmpl, error) {
	t, err := textTemplate(name, text)
	if err != nil {
		return nil, err
	}
	gen, err := checkCounts(t.Tree.Root)
	if err != nil {
		return nil, err
	}
	out := &tmpl{segs: fastSegs(text), bodyField: strings.Contains(text, ".Body."), generates: gen}
	if out.segs == nil {
		// Only a template off the fast path runs text/template; one on it keeps none: a
		// parsed template holds its own copy of the function map, about 3 KB.
		out.t = t
	}
	return out, nil
}

// newRun copies t.t with its text-making functions bound to a budget of the copy's own.
func (t *tmpl) newRun() *run {
	c, err := t.t.Clone()
	if err != nil { // text/template.Clone never fails
		panic(err)
	}
	b := new(renderBudget)
	return &run{t: c.Funcs(b.funcs()), budget: b}
}

// checkCounts refuses, at load, counts written into the template above mock.MaxTemplateCount:
// {{range 20000}} and {{seq 20000}} / {{string 20000}}. Counts computed from the request are
// checked by the functions when the template runs. It also reports whether the template
// calls a generator.
func checkCounts(n parse.Node) (generates bool, err error) {
	var walk func(parse.Node, int64)
	over := func(arg parse.Node) bool {
		num, ok := arg.(*parse.NumberNode)
		return ok && num.IsInt && (num.Int64 > mock.MaxTemplateCount || num.Int64 < 0)
	}
	walk = func(n parse.Node, iters int64) {
		if n == nil || err != nil {
			return
		}
		switch x := n.(type) {
		case *parse.ListNode:
			if x == nil {
				return
			}
			for _, c := range x.Nodes {
				walk(c, iters)
			}
		case *parse.ActionNode:
			walk(x.Pipe, iters)
		case *parse.PipeNode:
			if x == nil {
				return
			}
			for _, c := range x.Cmds {
				walk(c, iters)
			}
		case *parse.IdentifierNode:
			generates = generates || generatorFuncs()[x.Ident]
		case *parse.CommandNode:
			if len(x.Args) >= 2 {
				if id, ok := x.Args[0].(*parse.IdentifierNode); ok && slices.Contains(mock.CountFuncs, id.Ident) && over(x.Args[1]) {
					err = fmt.Errorf("%s: the count must be 0-%d", x, mock.MaxTemplateCount)
					return
				}
			}
			for _, a := range x.Args {
				walk(a, iters)
			}
		case *parse.RangeNode:
			if len(x.Pipe.Cmds) == 1 && len(x.Pipe.Cmds[0].Args) == 1 && over(x.Pipe.Cmds[0].Args[0]) {
				err = fmt.Errorf("range %s: the count must be 0-%d", x.Pipe, mock.MaxTemplateCount)
				return
			}
			inner := iters * rangeCount(x.Pipe)
			if inner > maxIterations {
				err = fmt.Errorf("range %s: nested counted ranges would run up to %d iterations (at most %d)", x.Pipe, inner, maxIterations)
				return
			}
			walk(x.Pipe, iters)
			walk(x.List, inner)
			walk(x.ElseList, iters)
		case *parse.IfNode:
			walk(x.Pipe, iters)
			walk(x.List, iters)
			walk(x.ElseList, iters)
		case *parse.WithNode:
			walk(x.Pipe, iters)
			walk(x.List, iters)
			walk(x.ElseList, iters)
		case *parse.TemplateNode:
			// A defined template runs where it is called, out of this walk's sight: its
			// ranges would escape the bound.
			err = fmt.Errorf("{{template %q}}: calling a defined template is not supported in a mock answer", x.Name)
		}
	}
	walk(n, 1)
	return generates, err
}

// maxIterations bounds the iterations of nested counted ranges ({{range 1000}}{{range seq
// 1000}}…): with each count at most mock.MaxTemplateCount, nesting is what could make a
// template run for minutes without writing anything.
const maxIterations = 1_000_000

// rangeCount is how many times a range over pipe may run when it counts: a number, or seq
// of a number (a count computed at run time is taken at its bound). A range over a variable
// is taken at the bound too ({{$s := seq 10000}}{{range $s}}: what a variable holds is not
// known here). A range over request data counts 1: the data is bounded by the request's size.
func rangeCount(pipe *parse.PipeNode) int64 {
	if pipe == nil || len(pipe.Cmds) != 1 {
		return 1
	}
	args := pipe.Cmds[0].Args
	if len(args) == 1 {
		switch a := args[0].(type) {
		case *parse.NumberNode:
			if a.IsInt {
				return max(a.Int64, 1)
			}
		case *parse.PipeNode:
			return rangeCount(a)
		case *parse.VariableNode:
			if len(a.Ident) == 1 && a.Ident[0] != "$" { // $s, not $ (the request) or $s.field
				return mock.MaxTemplateCount
			}
		}
		return 1
	}
	if id, ok := args[0].(*parse.IdentifierNode); ok && id.Ident == "seq" && len(args) == 2 {
		if num, ok := args[1].(*parse.NumberNode); ok && num.IsInt {
			return max(num.Int64, 1)
		}
		return mock.MaxTemplateCount
	}
	return 1
}

// fastSegs splits text into literals and plain lookups, or returns nil when it holds any
// other action.
func fastSegs(text string) []seg {
	var out []seg
	for len(text) > 0 {
		i := strings.Index(text, "{{")
		if i < 0 {
			return append(out, seg{key: text})
		}
		if i > 0 {
			out = append(out, seg{key: text[:i]})
		}
		m := simpleAction.FindStringSubmatch(text[i:])
		if m == nil || strings.Contains(m[0], "{{-") || strings.Contains(m[0], "-}}") {
			return nil
		}
		out = append(out, seg{src: m[1][0] | 0x20, key: m[2]}) // 'p', 'q', 'h'
		text = text[i+len(m[0]):]
	}
	return out
}

// exec renders the template over v. A missing value renders as "" (text/template prints
// "<no value>" for a missing key of a map[string]any even with missingkey=zero).
func (t *tmpl) exec(v *reqView) (string, error) {
	if t.segs != nil {
		if len(t.segs) == 1 {
			return t.segs[0].value(v), nil
		}
		var b strings.Builder
		for _, s := range t.segs {
			b.WriteString(s.value(v))
		}
		return b.String(), nil
	}
	buf := bufPool.Get().(*bytes.Buffer)
	buf.Reset()
	defer func() {
		if buf.Cap() <= 64<<10 { // a huge render's buffer is not kept
			bufPool.Put(buf)
		}
	}()
	r, _ := t.runs.Get().(*run)
	if r == nil {
		r = t.newRun()
	}
	defer t.runs.Put(r)
	deadline := time.Now().Add(renderTimeout)
	*r.budget = renderBudget{deadline: deadline, left: maxMadeText}
	if err := r.t.Execute(&boundedWriter{buf: buf, deadline: deadline}, v); err != nil {
		if t.bodyField && v.hasBody {
			if _, isObj := v.body.(jsonObject); !isObj {
				return "", errBodyNotObject
			}
		}
		return "", err
	}
	s := buf.String()
	if strings.Contains(s, "<no value>") {
		s = strings.ReplaceAll(s, "<no value>", "")
	}
	return s, nil
}

func (s seg) value(v *reqView) string {
	switch s.src {
	case 'p':
		return v.Params[s.key]
	case 'q':
		return v.req.Query.Get(s.key)
	case 'h':
		return v.Headers()[s.key]
	default:
		return s.key
	}
}

// hasTemplate reports whether s holds a template action.
func hasTemplate(s string) bool { return strings.Contains(s, "{{") }

var bufPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}
