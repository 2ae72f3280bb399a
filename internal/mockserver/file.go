package mockserver

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/acme/app/mock"
)

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
	Key     string
	Line    int
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
	if strings.EqualFold(filepath.Ext(name), ".json") {
		if err := checkJSON(data); err != nil {
			return nil, &LoadError{File: name, Problems: []Problem{*err}}
		}
	}
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, &LoadError{File: name, Problems: []Problem{yamlProblem(err)}}
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
		return nil, &LoadError{Problems: []Problem{yamlProblem(err)}}
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

func yamlProblem(err error) Problem {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	pr := Problem{Code: CodeSyntax, Message: msg, Severity: mock.SeverityError}
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		pr.Line, _ = strconv.Atoi(m[1])
		pr.Message = strings.TrimPrefix(msg, m[0]+": ")
	}
	return pr
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

type parser struct {
	set   *Set
	errs  []Problem
	warns []Problem

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

// file reads the top level: config and mocks.
func (p *parser) file(doc *yaml.Node) {
	f := p.fields(doc, "", "the file", "config", "mocks", "wiremock")
	if f == nil {
		return
	}
	if n, ok := f["wiremock"]; ok {
		p.set.WireMock, _ = p.str(n, "", "wiremock (a directory of WireMock mappings)")
	}
	if n, ok := f["config"]; ok {
		p.config(n)
	}
	if n, ok := f["mocks"]; ok {
		p.mocks(n)
	}
}

func (p *parser) config(n *yaml.Node) {
	f := p.fields(n, "", "config", "enabled", "delay", "fallbackToNetwork", "baseURL", "defaultHeaders",
		"ignorePatterns", "includePatterns", "routeMatching", "persistence", "logging", "preserveOriginalHeaders", "cors", "cache")
	cfg := &p.set.Config
	for k, v := range f {
		switch k {
		case "enabled":
			cfg.Enabled, _ = p.boolean(v, "", "config.enabled")
		case "fallbackToNetwork":
			cfg.FallbackToNetwork, _ = p.boolean(v, "", "config.fallbackToNetwork")
			p.set.FallbackSet = true
		case "preserveOriginalHeaders":
			cfg.PreserveOriginalHeaders, _ = p.boolean(v, "", "config.preserveOriginalHeaders")
		case "delay":
			cfg.Delay, _ = p.delay(v, "")
		case "baseURL":
			cfg.BaseURL, _ = p.str(v, "", "config.baseURL")
		case "defaultHeaders":
			m, _ := p.strMap(v, "", "config.defaultHeaders")
			if m != nil {
				// Merged over the default Content-Type: application/json.
				for hk, hv := range m {
					cfg.DefaultHeaders[hk] = hv.Value
				}
			}
		case "ignorePatterns":
			cfg.IgnorePatterns = p.patterns(v, "config.ignorePatterns")
		case "includePatterns":
			cfg.IncludePatterns = p.patterns(v, "config.includePatterns")
		case "routeMatching":
			p.routeMatching(v)
		case "persistence":
			p.persistence(v)
		case "logging":
			p.logging(v)
		case "cors":
			p.cors(v)
		case "cache":
			p.cacheRules(v)
		}
	}
}

// cacheRules reads config.cache: {methods: [GET, HEAD], statuses: ["2xx"]}, which answers the
// response cache keeps ("*" for any method or status).
func (p *parser) cacheRules(n *yaml.Node) {
	cc := &p.set.Config.Cache
	for k, v := range p.fields(n, "", "config.cache", "methods", "statuses") {
		v = resolve(v)
		what := "config.cache." + k
		if v.Kind != yaml.SequenceNode {
			p.fail(v, "", CodeType, "%s must be a list", what)
			continue
		}
		var out []string
		for _, c := range v.Content {
			s, ok := p.str(c, "", what+" entry")
			if !ok {
				continue
			}
			if k == "statuses" && !mock.ValidCacheStatus(s) {
				p.fail(c, "", CodeConfig, "%s: %q is not a status (200), a class (2xx) or *", what, s)
				continue
			}
			if k == "methods" {
				s = strings.ToUpper(s)
			}
			out = append(out, s)
		}
		if k == "methods" {
			cc.Methods = out
		} else {
			cc.Statuses = out
		}
	}
}

// cors reads config.cors: {origins: [...]}, the origins the CORS answers echo with
// credentials allowed (any other origin gets "*" without credentials).
func (p *parser) cors(n *yaml.Node) {
	for k, v := range p.fields(n, "", "config.cors", "origins") {
		if k != "origins" {
			continue
		}
		v = resolve(v)
		if v.Kind != yaml.SequenceNode {
			p.fail(v, "", CodeType, "config.cors.origins must be a list of origins (https://app.example.com)")
			continue
		}
		for _, c := range v.Content {
			if o, ok := p.str(c, "", "config.cors.origins entry"); ok {
				p.set.CORSOrigins = append(p.set.CORSOrigins, strings.TrimRight(o, "/"))
			}
		}
	}
}

// patterns reads a list of globs ("/api/health*") or regular expressions written "/…/".
func (p *parser) patterns(n *yaml.Node, what string) []mock.Pattern {
	n = resolve(n)
	if n.Kind != yaml.SequenceNode {
		p.fail(n, "", CodeType, "%s must be a list of globs or /regexps/", what)
		return nil
	}
	var out []mock.Pattern
	for _, c := range n.Content {
		s, ok := p.str(c, "", what+" entry")
		if !ok {
			continue
		}
		if len(s) > 2 && strings.HasPrefix(s, "/") && strings.HasSuffix(s, "/") {
			re, err := regexp.Compile(s[1 : len(s)-1])
			if err != nil {
				p.fail(c, "", CodeConfig, "%s: %v", what, err)
				continue
			}
			out = append(out, re)
			continue
		}
		out = append(out, mock.Glob(s))
	}
	return out
}

func (p *parser) routeMatching(n *yaml.Node) {
	rm := &p.set.Config.RouteMatching
	for k, v := range p.fields(n, "", "config.routeMatching", "caseSensitive", "exactMatch", "stripPrefix",
		"normalizeURLs", "parameterPrefix", "supportWildcards") {
		what := "config.routeMatching." + k
		switch k {
		case "caseSensitive":
			rm.CaseSensitive, _ = p.boolean(v, "", what)
		case "exactMatch":
			rm.ExactMatch, _ = p.boolean(v, "", what)
		case "normalizeURLs":
			rm.NormalizeURLs, _ = p.boolean(v, "", what)
		case "supportWildcards":
			rm.SupportWildcards, _ = p.boolean(v, "", what)
		case "stripPrefix":
			rm.StripPrefix, _ = p.str(v, "", what)
		case "parameterPrefix":
			if s, ok := p.str(v, "", what); ok {
				if s != ":" && s != "{" {
					p.fail(v, "", CodeConfig, "%s must be \":\" or \"{\"", what)
				}
				rm.ParameterPrefix = s
			}
		}
	}
}

func (p *parser) persistence(n *yaml.Node) {
	pc := &p.set.Config.Persistence
	for k, v := range p.fields(n, "", "config.persistence", "enabled", "ttl", "storage", "dir", "dbName",
		"dbVersion", "storeName", "maxCacheSize", "autoCleanup", "namespace") {
		what := "config.persistence." + k
		switch k {
		case "enabled":
			pc.Enabled, _ = p.boolean(v, "", what)
		case "autoCleanup":
			pc.AutoCleanup, _ = p.boolean(v, "", what)
		case "ttl":
			if s, ok := p.str(v, "", what); ok {
				d, err := parseMS(s)
				if err != nil || d == 0 {
					p.fail(v, "", CodeConfig, "%s must be positive milliseconds (300000) or a duration (\"5m\")", what)
				}
				pc.TTL = d
			}
		case "storage":
			if s, ok := p.str(v, "", what); ok {
				switch st := mock.Storage(strings.ToLower(s)); st {
				case mock.StorageMemory, mock.StorageIndexedDB, mock.StorageLocalStorage, mock.StorageIntelligent:
					pc.Storage = st
				default:
					p.fail(v, "", CodeConfig, "%s must be one of memory, indexeddb, localstorage, intelligent", what)
				}
			}
		case "dir":
			pc.Dir, _ = p.str(v, "", what)
		case "dbName":
			pc.DBName, _ = p.str(v, "", what)
		case "storeName":
			pc.StoreName, _ = p.str(v, "", what)
		case "namespace":
			pc.Namespace, _ = p.str(v, "", what)
		case "dbVersion":
			pc.DBVersion, _ = p.integer(v, "", what)
		case "maxCacheSize":
			if i, ok := p.integer(v, "", what); ok {
				if i <= 0 {
					p.fail(v, "", CodeConfig, "%s must be positive", what)
				}
				pc.MaxCacheSize = i
			}
		}
	}
}

func (p *parser) logging(n *yaml.Node) {
	lc := &p.set.Config.Logging
	for k, v := range p.fields(n, "", "config.logging", "enabled", "level", "logRequests", "logResponses",
		"logRouteMatching", "logCacheOperations") {
		what := "config.logging." + k
		switch k {
		case "enabled":
			lc.Enabled, _ = p.boolean(v, "", what)
		case "logRequests":
			lc.LogRequests, _ = p.boolean(v, "", what)
		case "logResponses":
			lc.LogResponses, _ = p.boolean(v, "", what)
		case "logRouteMatching":
			lc.LogRouteMatching, _ = p.boolean(v, "", what)
		case "logCacheOperations":
			lc.LogCacheOperations, _ = p.boolean(v, "", what)
		case "level":
			if s, ok := p.str(v, "", what); ok {
				var l slog.Level
				if err := l.UnmarshalText([]byte(s)); err != nil {
					p.fail(v, "", CodeConfig, "%s must be debug, info, warn or error", what)
				}
				lc.Level = l
			}
		}
	}
}

// mocks reads the route key → response spec mapping.
func (p *parser) mocks(n *yaml.Node) {
	n = resolve(n)
	if n.Tag == "!!null" {
		return
	}
	if n.Kind != yaml.MappingNode {
		p.fail(n, "", CodeType, "mocks must be a mapping of route keys (\"GET /users/:id\") to response specs")
		return
	}
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		key := strings.TrimSpace(k.Value)
		if line, dup := seen[key]; dup {
			p.fail(k, key, mock.VShadowedRoute, "route %q is defined twice (first at line %d)", key, line)
			continue
		}
		seen[key] = k.Line
		var src any
		_ = v.Decode(&src)
		p.dynamic, p.cache = false, nil
		h := p.route(key, v)
		src = jsonable(src)
		rc := mock.RouteCache{Digest: digest(key, src), Off: p.dynamic}
		if p.cache != nil {
			rc.Off = !*p.cache
		}
		p.set.Routes = append(p.set.Routes, Route{Key: key, Line: k.Line, Source: src, Handler: h, Cache: rc})
	}
}

var specFields = []string{"status", "statusText", "data", "body", "headers", "delay", "generate", "sequence", "templating", "cache"}

// digest identifies a route's definition: a hash of its key and its spec as JSON (map keys
// sorted by encoding/json, so the same spec always gives the same digest).
func digest(key string, src any) string {
	b, _ := json.Marshal(src)
	sum := sha256.Sum256(append([]byte(key+"\x00"), b...))
	return hex.EncodeToString(sum[:12])
}

// route compiles one response spec (or a sequence of them) into a handler.
func (p *parser) route(key string, n *yaml.Node) mock.Handler {
	f := p.fields(n, key, "the response spec", specFields...)
	if f == nil {
		return nil
	}
	if cn, ok := f["cache"]; ok {
		if b, good := p.boolean(cn, key, "cache"); good {
			p.cache = &b
		}
	}
	seqNode, isSeq := f["sequence"]
	if isSeq {
		p.dynamic = true
	}
	if !isSeq {
		r := p.response(key, f, resolve(n))
		if r == nil {
			return nil
		}
		return r.handler()
	}
	for _, other := range []string{"status", "statusText", "data", "body", "headers", "generate"} {
		if on, ok := f[other]; ok {
			p.fail(on, key, CodeConflict, "%s cannot be combined with sequence: put it in each step", other)
		}
	}
	seqNode = resolve(seqNode)
	if seqNode.Kind != yaml.SequenceNode || len(seqNode.Content) == 0 {
		p.fail(seqNode, key, CodeSequence, "sequence must be a non-empty list of response specs")
		return nil
	}
	steps := make([]*response, 0, len(seqNode.Content))
	for i, c := range seqNode.Content {
		sf := p.fields(c, key, fmt.Sprintf("sequence step %d", i+1), specFields...)
		if sf == nil {
			continue
		}
		if sn, nested := sf["sequence"]; nested {
			p.fail(sn, key, CodeSequence, "sequence step %d: a sequence cannot be nested", i+1)
			continue
		}
		if r := p.response(key, sf, resolve(c)); r != nil {
			if _, ok := sf["delay"]; !ok { // the route's delay applies to steps without their own
				if dn, ok := f["delay"]; ok {
					r.delay, _ = p.delay(dn, key)
				}
			}
			steps = append(steps, r)
		}
	}
	if len(steps) != len(seqNode.Content) {
		return nil
	}
	counter := new(atomic.Int64)
	p.set.seqs = append(p.set.seqs, counter)
	return sequenceHandler(steps, counter)
}

// response compiles one response spec.
func (p *parser) response(key string, f map[string]*yaml.Node, at *yaml.Node) *response {
	r := &response{status: 200}
	ok := true
	templating := true
	if n, has := f["templating"]; has {
		templating, _ = p.boolean(n, key, "templating")
	}
	if n, has := f["status"]; has {
		s, good := p.integer(n, key, "status")
		if good && (s < 100 || s > 599) {
			p.fail(n, key, CodeStatus, "status %d is not an HTTP status (100–599)", s)
			good = false
		}
		ok = ok && good
		r.status = s
	}
	if n, has := f["statusText"]; has {
		r.statusText, _ = p.str(n, key, "statusText")
	}
	if n, has := f["delay"]; has {
		d, good := p.delay(n, key)
		ok = ok && good
		r.delay = d
		if d.IsRange() {
			p.dynamic = true
		}
	}
	if n, has := f["headers"]; has {
		m, order := p.strMap(n, key, "headers")
		for _, name := range order {
			hv := m[name]
			h := header{name: name, static: hv.Value}
			if templating && hasTemplate(hv.Value) {
				t, err := p.parseTemplate(key, hv.Value)
				if err != nil {
					p.fail(hv, key, CodeTemplate, "header %s: %v", name, cleanTemplateErr(key, err))
					ok = false
					continue
				}
				h.t = t
			}
			r.headers = append(r.headers, h)
		}
	}
	dn, hasData := f["data"]
	bn, hasBody := f["body"]
	gn, hasGen := f["generate"]
	switch {
	case hasData && hasGen:
		p.fail(gn, key, CodeConflict, "data and generate exclude each other")
		return nil
	case hasData && hasBody:
		p.fail(bn, key, CodeConflict, "data and body exclude each other")
		return nil
	case hasBody && hasGen:
		p.fail(gn, key, CodeConflict, "body and generate exclude each other")
		return nil
	case hasData:
		t := p.tree(key, dn, templating)
		if t == nil {
			return nil
		}
		r.data = t.collapse()
	case hasBody:
		s, good := p.str(bn, key, "body")
		if !good {
			return nil
		}
		if templating && hasTemplate(s) {
			t, err := p.parseTemplate(key, s)
			if err != nil {
				p.fail(bn, key, CodeTemplate, "body: %v", cleanTemplateErr(key, err))
				return nil
			}
			r.body = t
		} else {
			r.rawBody = []byte(s)
		}
	case hasGen:
		p.dynamic = true
		v := p.generate(key, gn)
		if v == nil {
			return nil
		}
		r.data = v
	}
	r.finish()
	if !ok {
		return nil
	}
	return r
}

// tree compiles a data value.
func (p *parser) tree(key string, n *yaml.Node, templating bool) *tree {
	n = resolve(n)
	switch n.Kind {
	case yaml.MappingNode:
		t := &tree{isObj: true}
		index := map[string]int{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Tag == "!!merge" {
				mv := resolve(v)
				if mv.Kind == yaml.MappingNode {
					sub := p.tree(key, mv, templating)
					if sub == nil {
						return nil
					}
					for j, kk := range sub.keys {
						if _, dup := index[string(kk)]; !dup {
							index[string(kk)] = len(t.keys)
							t.keys = append(t.keys, kk)
							t.vals = append(t.vals, sub.vals[j])
						}
					}
				}
				continue
			}
			c := p.tree(key, v, templating)
			if c == nil {
				return nil
			}
			kb := append(appendString(nil, k.Value), ':')
			if j, dup := index[string(kb)]; dup {
				t.vals[j] = c
				continue
			}
			index[string(kb)] = len(t.keys)
			t.keys = append(t.keys, kb)
			t.vals = append(t.vals, c.collapse())
		}
		return t
	case yaml.SequenceNode:
		t := &tree{isArr: true}
		for _, c := range n.Content {
			ct := p.tree(key, c, templating)
			if ct == nil {
				return nil
			}
			t.items = append(t.items, ct.collapse())
		}
		return t
	case yaml.ScalarNode:
		if templating && n.Tag == "!!str" && hasTemplate(n.Value) {
			tm, err := p.parseTemplate(key, n.Value)
			if err != nil {
				p.fail(n, key, CodeTemplate, "data: %v", cleanTemplateErr(key, err))
				return nil
			}
			return &tree{t: tm}
		}
		var v any
		if err := n.Decode(&v); err != nil {
			p.fail(n, key, CodeType, "data: %v", err)
			return nil
		}
		if _, isTime := v.(time.Time); isTime { // an unquoted date stays as written
			v = n.Value
		}
		t, err := constTree(v)
		if err != nil {
			p.fail(n, key, CodeType, "data: %v", err)
			return nil
		}
		return t
	}
	p.fail(n, key, CodeType, "data holds an unsupported YAML node")
	return nil
}

// Generate kinds of the generate: shorthand.
var generateKinds = []string{"user", "product", "address", "uuid", "name", "email", "phone"}

// generate builds the generate: {kind, count, seed} shorthand: records generated once at load
// (seeded by the route key unless seed is given, so answers stay stable across requests and
// reloads), a single record without count, an array with it.
func (p *parser) generate(key string, n *yaml.Node) *tree {
	f := p.fields(n, key, "generate", "kind", "count", "seed")
	if f == nil {
		return nil
	}
	kn, has := f["kind"]
	if !has {
		p.fail(n, key, CodeGenerate, "generate needs a kind: one of %s", strings.Join(generateKinds, ", "))
		return nil
	}
	kind, ok := p.str(kn, key, "generate.kind")
	if !ok {
		return nil
	}
	if !slices.Contains(generateKinds, kind) {
		p.fail(kn, key, CodeGenerate, "unknown generate kind %q: one of %s", kind, strings.Join(generateKinds, ", "))
		return nil
	}
	count := -1
	if cn, has := f["count"]; has {
		c, ok := p.integer(cn, key, "generate.count")
		if !ok {
			return nil
		}
		if c < 0 || c > 10000 {
			p.fail(cn, key, CodeGenerate, "generate.count must be between 0 and 10000")
			return nil
		}
		count = c
	}
	h := fnv.New64a()
	h.Write([]byte(key))
	seed := h.Sum64()
	if sn, has := f["seed"]; has {
		s, ok := p.integer(sn, key, "generate.seed")
		if !ok {
			return nil
		}
		seed = uint64(s)
	}
	g := mock.NewGenerator(seed)
	one := func(int) any {
		switch kind {
		case "user":
			return g.User(mock.User{})
		case "product":
			return g.Product(mock.Product{})
		case "address":
			return g.Address(mock.Address{})
		case "uuid":
			return g.UUID()
		case "name":
			return g.Name()
		case "email":
			return g.Email()
		default:
			return g.Phone()
		}
	}
	var v any
	if count < 0 {
		v = one(0)
	} else {
		v = mock.Array(count, one)
	}
	t, err := constTree(v)
	if err != nil {
		p.fail(n, key, CodeGenerate, "%v", err)
		return nil
	}
	return t
}

// validateRoutes runs the mock package's validator over the route keys, with their lines.
func (p *parser) validateRoutes() {
	lines := map[string]int{}
	defs := mock.Definitions{}
	for _, r := range p.set.Routes {
		lines[r.Key] = r.Line
		h := r.Handler
		if h == nil { // already reported; keep the key checked
			h = mock.JSON(200, nil)
		}
		defs[r.Key] = h
	}
	res := mock.ValidateDefinitions(defs)
	for _, e := range res.Errors {
		p.errs = append(p.errs, Problem{Route: e.Route, Line: lines[e.Route], Code: e.Code, Message: e.Message, Severity: mock.SeverityError})
	}
	for _, e := range res.Warnings {
		p.warns = append(p.warns, Problem{Route: e.Route, Line: lines[e.Route], Code: e.Code, Message: e.Message, Severity: mock.SeverityWarning})
	}
}

// cleanTemplateErr drops text/template's "template: NAME:" prefix, which repeats the route.
func cleanTemplateErr(key string, err error) string {
	return "template: " + strings.TrimPrefix(err.Error(), "template: "+key+":")
}

// jsonable turns a YAML-decoded value into one encoding/json can encode (maps with
// non-string keys become string-keyed).
func jsonable(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, vv := range x {
			x[k] = jsonable(vv)
		}
		return x
	case map[any]any:
		m := make(map[string]any, len(x))
		for k, vv := range x {
			m[fmt.Sprint(k)] = jsonable(vv)
		}
		return m
	case []any:
		for i, vv := range x {
			x[i] = jsonable(vv)
		}
		return x
	default:
		return v
	}
}
