package openapi

import (
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Limits on what a description may make the loader do.
const (
	maxFileSize = 64 << 20 // bytes of one file
	maxFiles    = 128      // files one description may reference
	maxRefHops  = 32       // $ref to $ref to … before it is called a cycle
)

// Problem is one finding about a description: where it is (file, line, JSON pointer) and
// what is wrong.
type Problem struct {
	File    string `json:"file,omitempty"`
	Line    int    `json:"line,omitempty"`
	Pointer string `json:"pointer,omitempty"`
	Message string `json:"message"`
}

// String formats the problem as "file:line: pointer: message".
func (p Problem) String() string {
	var b strings.Builder
	if p.File != "" {
		b.WriteString(p.File)
		if p.Line > 0 {
			b.WriteString(":" + strconv.Itoa(p.Line))
		}
		b.WriteString(": ")
	} else if p.Line > 0 {
		fmt.Fprintf(&b, "line %d: ", p.Line)
	}
	if p.Pointer != "" {
		b.WriteString(p.Pointer + ": ")
	}
	b.WriteString(p.Message)
	return b.String()
}

// LoadError is a description that cannot be served: every problem found.
type LoadError struct {
	File     string
	Problems []Problem
}

func (e *LoadError) Error() string {
	msgs := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		msgs[i] = p.String()
	}
	return fmt.Sprintf("%s: %d problem(s): %s", e.File, len(e.Problems), strings.Join(msgs, "; "))
}

// document is one file of a description.
type document struct {
	path string // absolute
	url  string // file URL, the base of its references
	root any
}

// loc is a value of the description and where it is.
type loc struct {
	d   *document
	ptr string
	v   any
}

func (l loc) obj() *obj { o, _ := l.v.(*obj); return o }

// child is the value under key k of a mapping.
func (l loc) child(k string) loc {
	o := l.obj()
	v, _ := o.get(k)
	return loc{d: l.d, ptr: l.ptr + "/" + escapeToken(k), v: v}
}

// index is the i-th item of a list.
func (l loc) index(i int) loc {
	a, _ := l.v.([]any)
	var v any
	if i < len(a) {
		v = a[i]
	}
	return loc{d: l.d, ptr: l.ptr + "/" + strconv.Itoa(i), v: v}
}

// line is the line of the key holding the value, else of the value, when the tree knows it.
func (l loc) line() int {
	if i := strings.LastIndexByte(l.ptr, '/'); i >= 0 && l.d != nil {
		if parent, _, ok := lookup(l.d.root, l.ptr[:i]); ok {
			if o, isObj := parent.(*obj); isObj {
				if line := o.lines[unescapeToken(l.ptr[i+1:])]; line > 0 {
					return line
				}
			}
		}
	}
	if o := l.obj(); o != nil {
		return o.line
	}
	_, line, _ := lookup(l.d.root, l.ptr)
	return line
}

// loader reads the files of one description.
type loader struct {
	docs     map[string]*document
	problems []Problem
}

func (ld *loader) add(p Problem) { ld.problems = append(ld.problems, p) }

// load reads one file (once) and the files its references name, transitively. from is the
// $ref that names the file (nil for the description itself): a file that cannot be read is
// reported there, at the $ref's file, line and pointer, while a file that does not parse is
// reported in itself, at its own line.
func (ld *loader) load(path string, from *Problem) *document {
	cannot := func(msg string) *document {
		if from != nil {
			p := *from
			p.Message += ": " + msg
			ld.add(p)
		} else {
			ld.add(Problem{File: path, Message: msg})
		}
		return nil
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return cannot(err.Error())
	}
	if d, ok := ld.docs[abs]; ok {
		return d
	}
	if len(ld.docs) >= maxFiles {
		return cannot(fmt.Sprintf("more than %d files referenced", maxFiles))
	}
	data, err := readFile(abs)
	if err != nil {
		return cannot(err.Error())
	}
	root, perr := parse(data)
	if perr != nil {
		perr.File = path
		ld.add(*perr)
		return nil
	}
	d := &document{path: abs, url: fileURL(abs), root: root}
	ld.docs[abs] = d
	ld.follow(d, loc{d: d, v: root}, 0)
	return d
}

// follow loads the files that references under l name.
func (ld *loader) follow(d *document, l loc, depth int) {
	switch x := l.v.(type) {
	case *obj:
		if ref, ok := x.vals["$ref"].(string); ok {
			file, _, _ := strings.Cut(ref, "#")
			if file != "" {
				if u, err := url.Parse(file); err != nil || u.Scheme != "" && len(u.Scheme) > 1 {
					ld.add(Problem{File: d.path, Line: x.lineOf("$ref"), Pointer: l.ptr, Message: fmt.Sprintf("$ref %q: only references to local files are followed", ref)})
				} else {
					ld.load(filepath.Join(filepath.Dir(d.path), filepath.FromSlash(file)),
						&Problem{File: d.path, Line: x.lineOf("$ref"), Pointer: l.ptr + "/$ref", Message: fmt.Sprintf("$ref %q", ref)})
				}
			}
		}
		if depth > 512 {
			return
		}
		for _, k := range x.keys {
			ld.follow(d, l.child(k), depth+1)
		}
	case []any:
		for i := range x {
			ld.follow(d, l.index(i), depth+1)
		}
	}
}

// readFile reads a description file, at most maxFileSize bytes. It must be a regular file:
// opening a FIFO would wait for a writer without end, and a device (/dev/zero) has no end.
func readFile(path string) ([]byte, error) {
	if st, err := os.Stat(path); err != nil {
		return nil, err
	} else if !st.Mode().IsRegular() {
		return nil, errors.New("not a regular file")
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxFileSize+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxFileSize {
		return nil, fmt.Errorf("larger than %d MiB", maxFileSize>>20)
	}
	return data, nil
}

var yamlLine = regexp.MustCompile(`line (\d+)`)

// parse reads YAML or JSON (YAML accepts JSON) into the tree.
func parse(data []byte) (any, *Problem) {
	var n yaml.Node
	if err := yaml.Unmarshal(data, &n); err != nil {
		msg := strings.TrimPrefix(err.Error(), "yaml: ")
		p := &Problem{Message: "not well-formed YAML or JSON: " + msg}
		if m := yamlLine.FindStringSubmatch(msg); m != nil {
			p.Line, _ = strconv.Atoi(m[1])
		}
		return nil, p
	}
	v, err := (&converter{}).value(&n, 0)
	if err != nil {
		return nil, &Problem{Message: err.Error()}
	}
	return v, nil
}

// errRefCycle is a chain of references that does not end.
var errRefCycle = errors.New("a chain of $ref that does not end (a cycle?)")

// target finds what ref, written in d, points at.
func target(docs map[string]*document, d *document, ref string) (loc, error) {
	file, frag, _ := strings.Cut(ref, "#")
	td := d
	if file != "" {
		td = docs[filepath.Join(filepath.Dir(d.path), filepath.FromSlash(file))]
		if td == nil {
			return loc{}, fmt.Errorf("$ref %q: file %s not loaded", ref, file)
		}
	}
	if f, err := url.PathUnescape(frag); err == nil {
		frag = f
	}
	v, _, ok := lookup(td.root, frag)
	if !ok {
		return loc{}, fmt.Errorf("$ref %q points at nothing", ref)
	}
	return loc{d: td, ptr: frag, v: v}, nil
}

// resolve follows l while it is a reference.
func resolve(docs map[string]*document, l loc) (loc, error) {
	for range maxRefHops {
		o := l.obj()
		if o == nil {
			return l, nil
		}
		ref, ok := o.vals["$ref"].(string)
		if !ok {
			return l, nil
		}
		nl, err := target(docs, l.d, ref)
		if err != nil {
			return l, err
		}
		l = nl
	}
	return l, errRefCycle
}
