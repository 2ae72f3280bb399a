// Package wiremock serves WireMock stub mappings as they are: a directory holding
// mappings/*.json and __files/, as WireMock's recorder, its admin API and converters from
// Postman or OpenAPI write it. Load reads the directory into Stubs, an http.Handler that
// answers the way WireMock does (the lowest priority number wins, then the mapping loaded
// last; a miss answers 404 "Request was not matched"), with scenarios and faults.
//
// What a mapping asks for and this package does not do is never ignored silently: Load
// reports every such field as a Problem (file, mapping, field), and skips the mapping, since
// serving it without the field would answer requests WireMock would not, or answer them
// differently. The package uses the standard library only.
package wiremock

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// DefaultPriority is the priority of a mapping that names none (WireMock's default).
const DefaultPriority = 5

// maxMappingFile bounds one mapping file.
const maxMappingFile = 16 << 20

// Problem is a mapping, or a field of one, that cannot be served as WireMock would.
type Problem struct {
	File    string `json:"file"`              // relative to the directory
	Line    int    `json:"line,omitempty"`    // 1-based: the field's line, else the mapping's, else the error's
	Mapping string `json:"mapping,omitempty"` // name, else id, else its index in the file
	Field   string `json:"field,omitempty"`   // e.g. response.transformers
	Message string `json:"message"`
	// Unreadable is set when the file itself could not be read or parsed (none of its
	// mappings is served), as opposed to one mapping or field that is not supported.
	Unreadable bool `json:"unreadable,omitempty"`
}

func (p Problem) String() string {
	var b strings.Builder
	b.WriteString(p.File)
	if p.Line > 0 {
		fmt.Fprintf(&b, ":%d", p.Line)
	}
	if p.Mapping != "" {
		fmt.Fprintf(&b, ": mapping %s", p.Mapping)
	}
	if p.Field != "" {
		fmt.Fprintf(&b, ": %s", p.Field)
	}
	b.WriteString(": ")
	b.WriteString(p.Message)
	return b.String()
}

// Load reads dir/mappings/*.json (each a mapping, or {"mappings": [...]}) and the bodies
// they name in dir/__files. Mappings are ranked as WireMock ranks them: by priority, then
// the one loaded last first (files in name order, mappings in file order). Mappings with a
// field this package does not support are skipped and reported. The error is for a
// directory that cannot be read at all.
func Load(dir string) (*Stubs, []Problem, error) {
	mdir := filepath.Join(dir, "mappings")
	var files []string
	err := filepath.WalkDir(mdir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.EqualFold(filepath.Ext(p), ".json") {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("wiremock: read %s: %w", mdir, err)
	}
	sort.Strings(files)
	l := &loader{dir: dir, files: filepath.Join(dir, "__files")}
	for _, f := range files {
		l.file(f)
	}
	s := newStubs(l.stubs)
	return s, l.problems, nil
}

type loader struct {
	dir, files string
	stubs      []*stub
	problems   []Problem
	rel        string // the file being read, relative to dir
}

func (l *loader) file(name string) {
	l.rel, _ = filepath.Rel(l.dir, name)
	l.rel = filepath.ToSlash(l.rel)
	b, err := readBounded(name, maxMappingFile)
	if err != nil {
		l.problems = append(l.problems, Problem{File: l.rel, Message: err.Error(), Unreadable: true})
		return
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(b, &top); err != nil {
		p := Problem{File: l.rel, Line: lineAt(b, skipSpace(b, 0)), Message: "not a JSON object (a mapping, or {\"mappings\": [...]})", Unreadable: true}
		if se := (*json.SyntaxError)(nil); errors.As(err, &se) {
			p.Line, p.Message = lineAt(b, int(se.Offset)), "not a JSON object: "+err.Error()
		}
		l.problems = append(l.problems, p)
		return
	}
	if raw, ok := top["mappings"]; ok && top["request"] == nil {
		var list []json.RawMessage
		if err := json.Unmarshal(raw, &list); err != nil {
			l.problems = append(l.problems, Problem{File: l.rel, Line: lineAt(b, fieldOffsets(b)["mappings"]), Field: "mappings", Message: "must be an array of mappings", Unreadable: true})
			return
		}
		var starts []int // where each mapping starts in b, found only when one has problems
		for i, m := range list {
			before := len(l.problems)
			l.mapping(m, fmt.Sprintf("#%d", i+1))
			if len(l.problems) > before {
				if starts == nil {
					starts = elementOffsets(b, "mappings")
				}
				if i < len(starts) {
					l.placeProblems(b, starts[i], m, l.problems[before:])
				}
			}
		}
		return
	}
	before := len(l.problems)
	l.mapping(b, "")
	l.placeProblems(b, 0, b, l.problems[before:])
}

// placeProblems gives each problem of the mapping raw, which starts at offset base in the
// file b, the line of its field (or of the nearest field above it that the mapping writes,
// else of the mapping itself), then sorts them by line, so the report reads down the file.
func (l *loader) placeProblems(b []byte, base int, raw []byte, problems []Problem) {
	if len(problems) == 0 {
		return
	}
	offsets := fieldOffsets(raw)
	for i := range problems {
		off := skipSpace(raw, 0)
		for f := problems[i].Field; f != ""; f = parentField(f) {
			if o, ok := offsets[f]; ok {
				off = o
				break
			}
		}
		problems[i].Line = lineAt(b, base+off)
	}
	sort.SliceStable(problems, func(i, j int) bool {
		if problems[i].Line != problems[j].Line {
			return problems[i].Line < problems[j].Line
		}
		return problems[i].Field < problems[j].Field
	})
}

// parentField is the field that holds f ("request.bodyPatterns[0]" for
// "request.bodyPatterns[0].equalToXml", "request.bodyPatterns" for "request.bodyPatterns[0]"),
// or "" at the top.
func parentField(f string) string {
	i := strings.LastIndexAny(f, ".[")
	if i < 0 {
		return ""
	}
	return f[:i]
}

// lineAt is the 1-based line of offset off in b.
func lineAt(b []byte, off int) int {
	off = min(max(off, 0), len(b))
	return 1 + bytes.Count(b[:off], []byte{'\n'})
}

// skipSpace is the offset of the first byte at or after off that is neither JSON white space
// nor a separator: where the next key or value starts.
func skipSpace(b []byte, off int) int {
	for off < len(b) {
		switch b[off] {
		case ' ', '\t', '\n', '\r', ',', ':':
			off++
		default:
			return off
		}
	}
	return off
}

// fieldOffsets maps the path of every key and array item of the JSON value b, written as
// Problem.Field writes it (request.bodyPatterns[0].equalToXml), to the offset where it
// starts in b. A duplicate key keeps its first place. It is called only for a mapping that
// has problems, and stops at the first syntax error (b has parsed already).
func fieldOffsets(b []byte) map[string]int {
	out := map[string]int{}
	dec := json.NewDecoder(bytes.NewReader(b))
	_ = walkOffsets(dec, b, "", out)
	return out
}

func walkOffsets(dec *json.Decoder, b []byte, path string, out map[string]int) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	d, ok := tok.(json.Delim)
	if !ok {
		return nil
	}
	for i := 0; dec.More(); i++ {
		off := skipSpace(b, int(dec.InputOffset()))
		p := fmt.Sprintf("%s[%d]", path, i)
		if d == '{' {
			key, err := dec.Token()
			if err != nil {
				return err
			}
			p, _ = key.(string)
			if path != "" {
				p = path + "." + p
			}
		}
		if _, seen := out[p]; !seen {
			out[p] = off
		}
		if err := walkOffsets(dec, b, p, out); err != nil {
			return err
		}
	}
	_, err = dec.Token() // the closing delimiter
	return err
}

// elementOffsets is where each item of the array under the top-level key starts in the JSON
// object b.
func elementOffsets(b []byte, key string) []int {
	offsets := fieldOffsets(b)
	var starts []int
	for i := 0; ; i++ {
		o, ok := offsets[fmt.Sprintf("%s[%d]", key, i)]
		if !ok {
			return starts
		}
		starts = append(starts, o)
	}
}

func readBounded(name string, limit int64) ([]byte, error) {
	// Checked before opening: opening a FIFO waits for a writer, and a device (/dev/zero)
	// reports no size.
	st, err := os.Stat(name)
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, errors.New("not a regular file")
	}
	if st.Size() > limit {
		return nil, fmt.Errorf("%d bytes: over the %d MB limit", st.Size(), limit>>20)
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var buf bytes.Buffer
	// Bounded while reading too: the file may have grown, or been swapped, since the check.
	if _, err = buf.ReadFrom(io.LimitReader(f, limit+1)); err == nil && int64(buf.Len()) > limit {
		err = fmt.Errorf("over the %d MB limit", limit>>20)
	}
	return buf.Bytes(), err
}

// mp reads one mapping, collecting its problems; a mapping with any is skipped.
type mp struct {
	l        *loader
	label    string
	problems []Problem
	jsonBody json.RawMessage // response.jsonBody as written, for its key order
}

func (m *mp) bad(field, format string, args ...any) {
	m.problems = append(m.problems, Problem{File: m.l.rel, Mapping: m.label, Field: field, Message: fmt.Sprintf(format, args...)})
}

// str is v as a string, or a problem for field.
func (m *mp) str(field string, v any) string {
	s, ok := v.(string)
	if !ok {
		m.bad(field, "must be a string")
	}
	return s
}

func (m *mp) unsupported(field string) {
	m.bad(field, "not supported; the mapping is skipped")
}

// object decodes raw as a JSON object (numbers kept as json.Number).
func object(raw json.RawMessage) (map[string]any, bool) {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v map[string]any
	if err := d.Decode(&v); err != nil || v == nil {
		return nil, false
	}
	return v, true
}

func (l *loader) mapping(raw json.RawMessage, index string) {
	obj, ok := object(raw)
	m := &mp{l: l, label: index}
	var raw2 struct {
		Response struct {
			JSONBody json.RawMessage `json:"jsonBody"`
		} `json:"response"`
	}
	if ok && json.Unmarshal(raw, &raw2) == nil {
		m.jsonBody = raw2.Response.JSONBody
	}
	if !ok {
		m.bad("", "not a JSON object")
		l.problems = append(l.problems, m.problems...)
		return
	}
	if s, ok := obj["name"].(string); ok && s != "" {
		m.label = fmt.Sprintf("%q", s)
	} else if s, ok := obj["id"].(string); ok && s != "" {
		m.label = s
	} else if s, ok := obj["uuid"].(string); ok && s != "" {
		m.label = s
	}
	st := &stub{label: m.label, priority: DefaultPriority, order: len(l.stubs)}
	for k, v := range obj {
		switch k {
		case "id", "uuid", "name", "metadata", "persistent", "insertionIndex":
		case "priority":
			n, ok := intOf(v)
			if !ok || n < 1 {
				m.bad(k, "must be a positive integer")
			}
			st.priority = n
		case "request":
			rq, ok := v.(map[string]any)
			if !ok {
				m.bad(k, "must be an object")
				continue
			}
			m.request(rq, st)
		case "response":
			rs, ok := v.(map[string]any)
			if !ok {
				m.bad(k, "must be an object")
				continue
			}
			m.response(rs, st)
		case "scenarioName":
			st.scenario = m.str(k, v)
		case "requiredScenarioState":
			st.required = m.str(k, v)
		case "newScenarioState":
			st.newState = m.str(k, v)
		default:
			m.unsupported(k)
		}
	}
	// As in WireMock, a mapping without a request matches every request, and one without a
	// response answers 200 with no body.
	if _, ok := obj["request"]; !ok {
		m.request(map[string]any{}, st)
	}
	if _, ok := obj["response"]; !ok {
		m.response(map[string]any{}, st)
	}
	if (st.required != "" || st.newState != "") && st.scenario == "" {
		m.bad("scenarioName", "requiredScenarioState and newScenarioState need a scenarioName")
	}
	if len(m.problems) > 0 {
		l.problems = append(l.problems, m.problems...)
		return
	}
	l.stubs = append(l.stubs, st)
}

func intOf(v any) (int, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	i, err := n.Int64()
	if err != nil || i > math.MaxInt32 || i < math.MinInt32 {
		return 0, false
	}
	return int(i), true
}

func floatOf(v any) (float64, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	f, err := n.Float64()
	return f, err == nil && f >= 0
}

// ---- request ------------------------------------------------------------------------------
