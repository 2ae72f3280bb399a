// Package mockfile reads mock files: YAML or JSON documents of route keys ("GET /users/:id")
// to response specs, with templates over the request, generated data, sequences and the
// interceptor's configuration. Load gives the mock.Definitions and the mock.Config a
// mock.Interceptor serves, so a Go test uses, in-process through Interceptor.Client(), the
// same file a front end uses through `app mock serve`. Every problem of a file is reported
// with its route and line (a *LoadError), not only the first.
package mockfile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/acme/app/mock"
)

// Load reads and validates the mock file at path (YAML, or JSON when the name ends in .json)
// and returns its mocks and its configuration (the file's config section over
// mock.DefaultConfig, with the cache's view of each route), ready for mock.New. An invalid
// file is a *LoadError listing every problem.
func Load(path string) (mock.Definitions, mock.Config, error) {
	set, err := LoadFile(path)
	if err != nil {
		return nil, mock.Config{}, err
	}
	return set.Definitions(), set.InterceptorConfig(), nil
}

// Problem codes of a mock file, beside the mock package's route codes (INVALID_ROUTE_KEY,
// INVALID_METHOD, MALFORMED_PATH, …).
const (
	CodeSyntax     = "SYNTAX_ERROR"       // the file is not well-formed YAML or JSON
	CodeUnknownKey = "UNKNOWN_FIELD"      // a key the format does not know (a typo)
	CodeType       = "INVALID_TYPE"       // a value of the wrong type
	CodeStatus     = "INVALID_STATUS"     // status outside 100–599
	CodeDelay      = "INVALID_DELAY"      // a delay that is not ms, "min-max", [min, max] or a duration
	CodeTemplate   = "TEMPLATE_ERROR"     // a template that does not parse
	CodeGenerate   = "INVALID_GENERATE"   // an unknown generate kind or a bad count
	CodeSequence   = "INVALID_SEQUENCE"   // an empty or nested sequence
	CodeConflict   = "CONFLICTING_FIELDS" // fields that exclude each other (data and generate, …)
	CodeConfig     = "INVALID_CONFIG"     // a bad value in the config section
	CodeHeader     = "INVALID_HEADER"     // a header name HTTP does not allow, or a value with a line break
)

// Problem is one finding about a mock file: its route (empty for the config section or the
// file as a whole), the line the YAML parser gave for it (0 when unknown), a message and a
// code. Warnings do not stop a load.
type Problem struct {
	Route    string        `json:"route,omitempty"`
	Line     int           `json:"line,omitempty"`
	Code     string        `json:"code"`
	Message  string        `json:"message"`
	Severity mock.Severity `json:"severity"`
}

func (p Problem) String() string {
	var b strings.Builder
	if p.Line > 0 {
		fmt.Fprintf(&b, "line %d: ", p.Line)
	}
	if p.Route != "" {
		fmt.Fprintf(&b, "%s: ", p.Route)
	}
	b.WriteString(p.Message)
	fmt.Fprintf(&b, " [%s]", p.Code)
	return b.String()
}

// LoadError is a mock file that failed validation: every error found, in file order.
type LoadError struct {
	File     string
	Problems []Problem
}

func (e *LoadError) Error() string {
	msgs := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		msgs[i] = p.String()
	}
	name := e.File
	if name == "" {
		name = "mocks"
	}
	return fmt.Sprintf("%s: %d problem(s): %s", name, len(e.Problems), strings.Join(msgs, "; "))
}

// Route is one loaded mock: its key, where it was defined, its source (for GET /__mock/mocks)
// and the handler built from it.
type Route struct {
	Key  string
	Line int
	// Source is the route's spec as JSON (a json.RawMessage; nil when the spec has a value
	// JSON cannot hold, such as .nan).
	Source  any
	Handler mock.Handler
	// Cache is the digest of the route's definition and whether its answers may be cached.
	Cache mock.RouteCache
}

// Set is a loaded and validated mock file.
type Set struct {
	// Config is the file's config section over mock.DefaultConfig.
	Config mock.Config
	// FallbackSet reports whether the file set fallbackToNetwork itself.
	FallbackSet bool
	// WireMock is the file's wiremock: a directory of WireMock stub mappings served beside
	// the mocks (relative to the file's directory once loaded by LoadFile).
	WireMock string
	// MiddlewareSpec is config.middleware as written (Config.Middleware holds the middleware).
	MiddlewareSpec []any
	// CORSOrigins are config.cors.origins: the origins CORS answers echo with credentials.
	CORSOrigins []string
	// Routes are the mocks in file order.
	Routes []Route
	// Warnings are findings that did not stop the load (shadowed routes, …).
	Warnings []Problem

	seqs []*atomic.Int64
}

// Definitions returns the routes as mock definitions.
func (s *Set) Definitions() mock.Definitions {
	d := make(mock.Definitions, len(s.Routes))
	for _, r := range s.Routes {
		d[r.Key] = r.Handler
	}
	return d
}

// InterceptorConfig is the file's configuration with the cache's view of each route.
func (s *Set) InterceptorConfig() mock.Config {
	cfg := s.Config
	cfg.Cache.Routes = s.CacheRoutes()
	return cfg
}

// CacheRoutes returns the cache's view of each route, by route key.
func (s *Set) CacheRoutes() map[string]mock.RouteCache {
	m := make(map[string]mock.RouteCache, len(s.Routes))
	for _, r := range s.Routes {
		m[r.Key] = r.Cache
	}
	return m
}

// ResetSequences starts every sequence of the set again at its first response.
func (s *Set) ResetSequences() {
	for _, c := range s.seqs {
		c.Store(0)
	}
}

// LoadFile reads and validates a mock file. Its format is JSON when the name ends in .json,
// else YAML (which accepts JSON too). A file with errors returns a *LoadError.
func LoadFile(path string) (*Set, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	set, err := Parse(data, path)
	if err == nil && set.WireMock != "" && !filepath.IsAbs(set.WireMock) {
		set.WireMock = filepath.Join(filepath.Dir(path), set.WireMock)
	}
	return set, err
}

// Parse reads a mock file's bytes; name is used in messages and to tell JSON (.json) from YAML.
func Parse(data []byte, name string) (*Set, error) {
	p := &parser{set: &Set{Config: mock.DefaultConfig()}}
	p.base, _ = filepath.Abs(filepath.Dir(name))
	if strings.EqualFold(filepath.Ext(name), ".json") {
		if err := checkJSON(data); err != nil {
			return nil, &LoadError{File: name, Problems: []Problem{*err}}
		}
	}
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, &LoadError{File: name, Problems: []Problem{yamlProblem(err, data)}}
	}
	if pr := tooManyValues(&root); pr != nil {
		return nil, &LoadError{File: name, Problems: []Problem{*pr}}
	}
	if len(root.Content) > 0 {
		p.file(root.Content[0])
	}
	p.validateRoutes()
	if len(p.errs) > 0 {
		sort.SliceStable(p.errs, func(i, j int) bool { return p.errs[i].Line < p.errs[j].Line })
		return nil, &LoadError{File: name, Problems: p.errs}
	}
	p.set.Warnings = p.warns
	return p.set, nil
}

// ParseMocks reads a JSON (or YAML) object of route key → response spec, the body of
// POST /__mock/mocks.
func ParseMocks(data []byte) (*Set, error) {
	p := &parser{set: &Set{Config: mock.DefaultConfig()}}
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, &LoadError{Problems: []Problem{yamlProblem(err, data)}}
	}
	if pr := tooManyValues(&root); pr != nil {
		return nil, &LoadError{Problems: []Problem{*pr}}
	}
	if len(root.Content) == 0 {
		return nil, &LoadError{Problems: []Problem{{Code: CodeType, Message: "body must be an object of route key to response spec", Severity: mock.SeverityError}}}
	}
	p.mocks(root.Content[0])
	p.validateRoutes()
	if len(p.errs) > 0 {
		return nil, &LoadError{Problems: p.errs}
	}
	p.set.Warnings = p.warns
	return p.set, nil
}

var yamlLine = regexp.MustCompile(`line (\d+)`)

// maxValues bounds the values a mock file (or an admin body) may hold once its YAML aliases
// are expanded, so that a few hundred bytes of nested aliases cannot expand into gigabytes.
const maxValues = 4 << 20

// tooManyValues reports a document holding more than maxValues values once expanded, or nil.
// The parsed tree shares an anchored value between its aliases; counting each node once,
// with what its aliases expand to, takes time in the size of the file. An alias inside its own
// anchor counts as too many.
func tooManyValues(root *yaml.Node) *Problem {
	sizes := map[*yaml.Node]int{}
	var size func(n *yaml.Node) int
	size = func(n *yaml.Node) int {
		if s, ok := sizes[n]; ok {
			return s
		}
		sizes[n] = maxValues + 1 // an alias inside its own anchor expands without end
		s := 1
		if n.Kind == yaml.AliasNode && n.Alias != nil {
			s = size(n.Alias)
		}
		for _, c := range n.Content {
			if s += size(c); s > maxValues {
				break
			}
		}
		sizes[n] = s
		return s
	}
	if size(root) <= maxValues {
		return nil
	}
	return &Problem{Code: CodeType, Severity: mock.SeverityError,
		Message: fmt.Sprintf("the document holds more than %d values once its aliases are expanded", maxValues)}
}

func yamlProblem(err error, data []byte) Problem {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	pr := Problem{Code: CodeSyntax, Message: msg, Severity: mock.SeverityError}
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		pr.Line, _ = strconv.Atoi(m[1])
		pr.Message = strings.TrimPrefix(msg, m[0]+": ")
		return pr
	}
	// The parser names no line for text it cannot read (a byte that is not UTF-8, as a file
	// saved as Latin-1 holds, or a control character): find it, so the problem says where.
	if off, r, ok := badTextAt(data); ok {
		pr.Line = 1 + bytes.Count(data[:off], []byte("\n"))
		switch {
		case r < 0:
			pr.Message = fmt.Sprintf("%s: byte 0x%02X is not UTF-8; save the file as UTF-8 text", msg, data[off])
		case r < 0x80:
			pr.Message = fmt.Sprintf("%s: byte 0x%02X", msg, r)
		default:
			pr.Message = fmt.Sprintf("%s: character %U", msg, r)
		}
	}
	return pr
}

// badTextAt finds the first byte of data that YAML cannot read as text: one that is not
// UTF-8 (r < 0), or a character YAML does not allow in a file (r). ok is false when there is
// none, or when data is UTF-16 (it starts with a byte order mark), which the parser decodes
// itself.
func badTextAt(data []byte) (off int, r rune, ok bool) {
	if bytes.HasPrefix(data, []byte{0xFF, 0xFE}) || bytes.HasPrefix(data, []byte{0xFE, 0xFF}) {
		return 0, 0, false
	}
	for off < len(data) {
		r, n := utf8.DecodeRune(data[off:])
		if r == utf8.RuneError && n <= 1 {
			return off, -1, true
		}
		if !yamlPrintable(r) {
			return off, r, true
		}
		off += n
	}
	return 0, 0, false
}

// yamlPrintable reports whether YAML allows r in a file (YAML 1.2 §5.1, as the parser checks).
func yamlPrintable(r rune) bool {
	return r == '\t' || r == '\n' || r == '\r' || r >= 0x20 && r <= 0x7E || r == 0x85 ||
		r >= 0xA0 && r <= 0xD7FF || r >= 0xE000 && r <= 0xFFFD || r >= 0x10000 && r <= 0x10FFFF
}

// checkJSON reports a JSON syntax error with its line.
func checkJSON(data []byte) *Problem {
	var v any
	err := json.Unmarshal(data, &v)
	if err == nil {
		return nil
	}
	pr := &Problem{Code: CodeSyntax, Message: err.Error(), Severity: mock.SeverityError}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		pr.Line = 1 + bytes.Count(data[:min(int(se.Offset), len(data))], []byte("\n"))
	}
	return pr
}
