package mockserver

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/acme/app/mock"
	"github.com/acme/app/mock/mockfile"
)

// maxAdminBody caps admin request bodies.
const maxAdminBody = 4 << 20

// adminHandler serves the admin API under /__mock/ (see docs/mock-file.md).
func (s *Server) adminHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /__mock/stats", s.handleStats)
	mux.HandleFunc("GET /__mock/mocks", s.handleListMocks)
	mux.HandleFunc("POST /__mock/mocks", s.handleAddMocks)
	mux.HandleFunc("DELETE /__mock/mocks", s.handleDeleteMocks)
	mux.HandleFunc("GET /__mock/config", s.handleGetConfig)
	mux.HandleFunc("PATCH /__mock/config", s.handlePatchConfig)
	mux.HandleFunc("POST /__mock/reset", s.handleReset)
	mux.HandleFunc("POST /__mock/reload", s.handleReload)
	mux.HandleFunc("POST "+wiremockReset, s.handleScenarioReset)
	return guardAdmin(s.opts.AdminToken, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, pattern := mux.Handler(r); pattern == "" {
			adminError(w, http.StatusNotFound, "no admin endpoint "+r.Method+" "+r.URL.Path+
				"; see GET/POST/DELETE /__mock/mocks, GET /__mock/stats, GET/PATCH /__mock/config, POST /__mock/reset, POST /__mock/reload", nil)
			return
		}
		mux.ServeHTTP(w, r)
	}))
}

// wiremockReset is WireMock's own scenario reset, served for tools that call it.
const wiremockReset = "/__admin/scenarios/reset"

// handleScenarioReset puts every WireMock scenario back in its Started state.
func (s *Server) handleScenarioReset(w http.ResponseWriter, _ *http.Request) {
	if wm := s.wm.Load(); wm != nil {
		wm.ResetScenarios()
	}
	writeAdmin(w, http.StatusOK, map[string]any{"reset": true})
}

func writeAdmin(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"statusCode":500,"message":"encode","error":"Internal Server Error"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// adminError answers in the project's error envelope, with the problems of a mock set when
// there are some.
func adminError(w http.ResponseWriter, status int, msg string, problems []mockfile.Problem) {
	body := map[string]any{"statusCode": status, "message": msg, "error": http.StatusText(status)}
	if problems != nil {
		body["problems"] = problems
	}
	writeAdmin(w, status, body)
}

func readAdminBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxAdminBody))
	if err != nil {
		adminError(w, http.StatusRequestEntityTooLarge, "body too large", nil)
		return nil, false
	}
	return b, true
}

func (s *Server) handleStats(w http.ResponseWriter, _ *http.Request) {
	writeAdmin(w, http.StatusOK, s.ic.Stats())
}

// mockInfo is one entry of GET /__mock/mocks.
type mockInfo struct {
	Route  string `json:"route"`
	Origin string `json:"origin"` // file, builtin, runtime or openapi
	Line   int    `json:"line,omitempty"`
	Calls  int    `json:"calls"`
	Spec   any    `json:"spec,omitempty"`
}

func (s *Server) handleListMocks(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	origin := "file"
	if s.opts.File == "" {
		origin = "builtin"
	}
	info := map[string]mockInfo{}
	for _, r := range s.specs.visible(s.set.Definitions()) {
		info[r.Key] = mockInfo{Route: r.Key, Origin: "openapi", Line: r.Line,
			Spec: map[string]any{"method": r.Method, "path": r.Path, "operationId": r.OperationID}}
	}
	for _, r := range s.set.Routes {
		if !s.removed[r.Key] {
			info[r.Key] = mockInfo{Route: r.Key, Origin: origin, Line: r.Line, Spec: r.Source}
		}
	}
	for k, r := range s.runtime {
		info[k] = mockInfo{Route: k, Origin: "runtime", Spec: r.Source}
	}
	s.mu.Unlock()
	out := make([]mockInfo, 0, len(info))
	for _, m := range info {
		m.Calls = s.ic.Calls(m.Route)
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Route < out[j].Route })
	writeAdmin(w, http.StatusOK, map[string]any{"count": len(out), "mocks": out})
}

// handleAddMocks adds mocks at runtime: the body is an object of route key → response spec,
// in the file's format. They are validated like a file; they replace mocks with the same key
// and survive reloads of the file.
func (s *Server) handleAddMocks(w http.ResponseWriter, r *http.Request) {
	b, ok := readAdminBody(w, r)
	if !ok {
		return
	}
	set, err := mockfile.ParseMocks(b)
	if err != nil {
		adminLoadError(w, err)
		return
	}
	if len(set.Routes) == 0 {
		adminError(w, http.StatusBadRequest, "no mocks in the body: send an object of route key to response spec", nil)
		return
	}
	s.mu.Lock()
	prevRuntime, prevRemoved := maps.Clone(s.runtime), maps.Clone(s.removed) // neither is ever nil
	added := make([]string, 0, len(set.Routes))
	for _, rt := range set.Routes {
		s.runtime[rt.Key] = rt
		delete(s.removed, rt.Key)
		added = append(added, rt.Key)
	}
	s.runtimeSets = append(s.runtimeSets, set)
	err = s.apply(s.set)
	if err != nil {
		s.runtime, s.removed = prevRuntime, prevRemoved
	}
	s.mu.Unlock()
	if err != nil {
		adminLoadError(w, err)
		return
	}
	writeAdmin(w, http.StatusCreated, map[string]any{"added": added, "warnings": nonNil(set.Warnings)})
}

func nonNil(p []mockfile.Problem) []mockfile.Problem {
	if p == nil {
		return []mockfile.Problem{}
	}
	return p
}

// handleDeleteMocks removes mocks by route key: ?route=GET%20/users/:id (repeatable) or a
// body {"routes": [...]}. A removed file mock comes back when the file is reloaded.
func (s *Server) handleDeleteMocks(w http.ResponseWriter, r *http.Request) {
	routes := r.URL.Query()["route"]
	b, ok := readAdminBody(w, r)
	if !ok {
		return
	}
	if len(strings.TrimSpace(string(b))) > 0 {
		var body struct {
			Routes []string `json:"routes"`
		}
		if err := json.Unmarshal(b, &body); err != nil {
			adminError(w, http.StatusBadRequest, `body must be {"routes": ["GET /path", ...]}`, nil)
			return
		}
		routes = append(routes, body.Routes...)
	}
	if len(routes) == 0 {
		adminError(w, http.StatusBadRequest, `name the routes to remove: ?route=GET%20/path or {"routes": [...]}`, nil)
		return
	}
	current := map[string]bool{}
	for _, k := range s.ic.Mocks() {
		current[k] = true
	}
	removed, unknown := []string{}, []string{}
	s.mu.Lock()
	for _, k := range routes {
		k = strings.TrimSpace(k)
		if !current[k] {
			unknown = append(unknown, k)
			continue
		}
		delete(s.runtime, k)
		s.removed[k] = true
		removed = append(removed, k)
	}
	err := s.apply(s.set)
	s.mu.Unlock()
	if err != nil {
		adminError(w, http.StatusInternalServerError, err.Error(), nil)
		return
	}
	status := http.StatusOK
	if len(removed) == 0 {
		status = http.StatusNotFound
	}
	writeAdmin(w, status, map[string]any{"removed": removed, "unknown": unknown})
}

// configView is the body of GET /__mock/config: the whole effective configuration (the
// file's, the flags', the runtime changes and the defaults). Secrets are never shown: the
// admin token only as set or not.
type configView struct {
	Enabled                 bool               `json:"enabled"`
	Delay                   delayView          `json:"delay"`
	FallbackToNetwork       bool               `json:"fallbackToNetwork"`
	Target                  string             `json:"target,omitempty"`
	File                    string             `json:"file,omitempty"`
	WireMock                string             `json:"wiremock,omitempty"`
	WireMockMappings        int                `json:"wiremockMappings"`
	Routes                  int                `json:"routes"`
	CORS                    bool               `json:"cors"`
	CORSOrigins             []string           `json:"corsOrigins"`
	AdminToken              bool               `json:"adminTokenSet"`
	Record                  string             `json:"record,omitempty"`
	RecordSecrets           bool               `json:"recordSecrets"`
	BaseURL                 string             `json:"baseURL,omitempty"`
	DefaultHeaders          map[string]string  `json:"defaultHeaders"`
	PreserveOriginalHeaders bool               `json:"preserveOriginalHeaders"`
	IgnorePatterns          []string           `json:"ignorePatterns"`
	IncludePatterns         []string           `json:"includePatterns"`
	Middleware              []any              `json:"middleware"`
	Persistence             persistenceView    `json:"persistence"`
	Cache                   cacheView          `json:"cache"`
	Logging                 loggingView        `json:"logging"`
	LoadedAt                string             `json:"loadedAt"`
	Warnings                []mockfile.Problem `json:"warnings"`
	RouteMatching           matchView          `json:"routeMatching"`
}

type persistenceView struct {
	Enabled      bool   `json:"enabled"`
	TTL          int64  `json:"ttl"` // ms
	Storage      string `json:"storage"`
	Dir          string `json:"dir,omitempty"`
	DBName       string `json:"dbName"`
	DBVersion    int    `json:"dbVersion"`
	StoreName    string `json:"storeName"`
	MaxCacheSize int    `json:"maxCacheSize"`
	AutoCleanup  bool   `json:"autoCleanup"`
	Namespace    string `json:"namespace"`
}

type cacheView struct {
	Methods  []string `json:"methods"`
	Statuses []string `json:"statuses"`
}

type loggingView struct {
	Enabled            bool   `json:"enabled"`
	Level              string `json:"level"`
	LogRequests        bool   `json:"logRequests"`
	LogResponses       bool   `json:"logResponses"`
	LogRouteMatching   bool   `json:"logRouteMatching"`
	LogCacheOperations bool   `json:"logCacheOperations"`
}

func patternStrings(ps []mock.Pattern) []string {
	out := make([]string, 0, len(ps))
	for _, p := range ps {
		if st, ok := p.(fmt.Stringer); ok {
			out = append(out, st.String()) // globs and regular expressions both are
		} else {
			out = append(out, fmt.Sprint(p))
		}
	}
	return out
}

type delayView struct {
	Min int64 `json:"min"`
	Max int64 `json:"max"`
}

type matchView struct {
	CaseSensitive    bool   `json:"caseSensitive"`
	ExactMatch       bool   `json:"exactMatch"`
	StripPrefix      string `json:"stripPrefix,omitempty"`
	NormalizeURLs    bool   `json:"normalizeURLs"`
	ParameterPrefix  string `json:"parameterPrefix"`
	SupportWildcards bool   `json:"supportWildcards"`
}

func (s *Server) configView() configView {
	cfg := s.ic.Config()
	s.mu.Lock()
	defer s.mu.Unlock()
	v := configView{
		Enabled:                 cfg.Enabled,
		Delay:                   delayView{Min: cfg.Delay.Min.Milliseconds(), Max: max(cfg.Delay.Max, cfg.Delay.Min).Milliseconds()},
		FallbackToNetwork:       cfg.FallbackToNetwork,
		File:                    s.opts.File,
		Routes:                  len(s.ic.Mocks()),
		CORS:                    !s.opts.NoCORS,
		CORSOrigins:             append(append([]string{}, s.opts.CORSOrigins...), s.set.CORSOrigins...),
		AdminToken:              s.opts.AdminToken != "",
		Record:                  s.opts.Record,
		RecordSecrets:           s.opts.RecordSecrets,
		BaseURL:                 cfg.BaseURL,
		DefaultHeaders:          cfg.DefaultHeaders,
		PreserveOriginalHeaders: cfg.PreserveOriginalHeaders,
		IgnorePatterns:          patternStrings(cfg.IgnorePatterns),
		IncludePatterns:         patternStrings(cfg.IncludePatterns),
		Middleware:              append([]any{}, s.set.MiddlewareSpec...),
		Persistence: persistenceView{
			Enabled: cfg.Persistence.Enabled, TTL: cfg.Persistence.TTL.Milliseconds(), Storage: string(cfg.Persistence.Storage),
			Dir: cfg.Persistence.Dir, DBName: cfg.Persistence.DBName, DBVersion: cfg.Persistence.DBVersion,
			StoreName: cfg.Persistence.StoreName, MaxCacheSize: cfg.Persistence.MaxCacheSize,
			AutoCleanup: cfg.Persistence.AutoCleanup, Namespace: cfg.Persistence.Namespace,
		},
		Cache: cacheView{Methods: cfg.Cache.Methods, Statuses: cfg.Cache.Statuses},
		Logging: loggingView{
			Enabled: cfg.Logging.Enabled, Level: strings.ToLower(cfg.Logging.Level.String()),
			LogRequests: cfg.Logging.LogRequests, LogResponses: cfg.Logging.LogResponses,
			LogRouteMatching: cfg.Logging.LogRouteMatching, LogCacheOperations: cfg.Logging.LogCacheOperations,
		},
		WireMock:         s.opts.WireMock,
		WireMockMappings: 0,
		LoadedAt:         s.loaded.UTC().Format("2006-01-02T15:04:05.000Z"),
		Warnings:         nonNil(s.set.Warnings),
		RouteMatching: matchView{
			CaseSensitive: cfg.RouteMatching.CaseSensitive, ExactMatch: cfg.RouteMatching.ExactMatch,
			StripPrefix: cfg.RouteMatching.StripPrefix, NormalizeURLs: cfg.RouteMatching.NormalizeURLs,
			ParameterPrefix: cfg.RouteMatching.ParameterPrefix, SupportWildcards: cfg.RouteMatching.SupportWildcards,
		},
	}
	if s.opts.Target != nil {
		v.Target = s.opts.Target.String()
	}
	if v.WireMock == "" {
		v.WireMock = s.set.WireMock
	}
	if wm := s.wm.Load(); wm != nil {
		v.WireMockMappings = wm.Len()
	}
	return v
}

func (s *Server) handleGetConfig(w http.ResponseWriter, _ *http.Request) {
	writeAdmin(w, http.StatusOK, s.configView())
}

// handlePatchConfig changes delay, enabled and fallbackToNetwork at runtime:
// {"delay": 200 | "100-400" | [100, 400], "enabled": false, "fallbackToNetwork": true}.
// The changes outlive reloads of the file.
func (s *Server) handlePatchConfig(w http.ResponseWriter, r *http.Request) {
	b, ok := readAdminBody(w, r)
	if !ok {
		return
	}
	var body map[string]json.RawMessage
	if err := json.Unmarshal(b, &body); err != nil || body == nil {
		adminError(w, http.StatusBadRequest, "body must be a JSON object", nil)
		return
	}
	var msgs []string
	var ovr overrides
	for k, raw := range body {
		switch k {
		case "delay":
			d, err := delayJSON(raw)
			if err != nil {
				msgs = append(msgs, "delay must be milliseconds, \"min-max\" or [min, max]")
				continue
			}
			ovr.delay = &d
		case "enabled":
			var v bool
			if json.Unmarshal(raw, &v) != nil {
				msgs = append(msgs, "enabled must be a boolean")
				continue
			}
			ovr.enabled = &v
		case "fallbackToNetwork", "fallback":
			var v bool
			if json.Unmarshal(raw, &v) != nil {
				msgs = append(msgs, k+" must be a boolean")
				continue
			}
			ovr.fallback = &v
		default:
			msgs = append(msgs, "unknown field "+strconv.Quote(k)+": only delay, enabled and fallbackToNetwork can change at runtime")
		}
	}
	if len(msgs) > 0 {
		sort.Strings(msgs)
		writeAdmin(w, http.StatusBadRequest, map[string]any{"statusCode": 400, "message": msgs, "error": "Bad Request"})
		return
	}
	s.mu.Lock()
	prev := s.ovr
	if ovr.delay != nil {
		s.ovr.delay = ovr.delay
	}
	if ovr.enabled != nil {
		s.ovr.enabled = ovr.enabled
	}
	if ovr.fallback != nil {
		s.ovr.fallback = ovr.fallback
	}
	err := s.apply(s.set)
	if err != nil {
		s.ovr = prev
	}
	s.mu.Unlock()
	if err != nil {
		adminError(w, http.StatusInternalServerError, err.Error(), nil)
		return
	}
	writeAdmin(w, http.StatusOK, s.configView())
}

func delayJSON(raw json.RawMessage) (mock.Delay, error) {
	var n float64
	if json.Unmarshal(raw, &n) == nil {
		return mockfile.ParseDelay(strconv.FormatInt(int64(n), 10))
	}
	var str string
	if json.Unmarshal(raw, &str) == nil {
		return mockfile.ParseDelay(str)
	}
	var pair []int64
	if json.Unmarshal(raw, &pair) == nil && len(pair) == 2 {
		return mockfile.ParseDelay(strconv.FormatInt(pair[0], 10) + "-" + strconv.FormatInt(pair[1], 10))
	}
	return mock.Delay{}, errors.New("bad delay")
}

// handleReset zeroes the statistics and restarts every sequence.
func (s *Server) handleReset(w http.ResponseWriter, _ *http.Request) {
	s.ic.ResetStats()
	s.mu.Lock()
	s.set.ResetSequences()
	for _, rs := range s.runtimeSets {
		rs.ResetSequences()
	}
	s.mu.Unlock()
	if wm := s.wm.Load(); wm != nil {
		wm.ResetScenarios()
	}
	writeAdmin(w, http.StatusOK, map[string]any{"reset": true, "stats": s.ic.Stats()})
}

// handleReload re-reads the mock file now (what WireMock users do with mappings/reset).
func (s *Server) handleReload(w http.ResponseWriter, _ *http.Request) {
	if err := s.Reload(); err != nil {
		var le *mockfile.LoadError
		if sl, ok := specProblems(err); ok {
			adminError(w, http.StatusBadRequest, "OpenAPI description invalid; the previous mocks stay", sl.Problems)
			return
		}
		if errors.As(err, &le) {
			adminError(w, http.StatusBadRequest, "mock file invalid; the previous mocks stay", le.Problems)
			return
		}
		adminError(w, http.StatusBadRequest, err.Error(), nil)
		return
	}
	writeAdmin(w, http.StatusOK, map[string]any{"reloaded": true, "routes": len(s.ic.Mocks())})
}

// adminLoadError answers a mock set that failed to load: 400 with its problems when it has
// them, else with the error's text.
func adminLoadError(w http.ResponseWriter, err error) {
	var le *mockfile.LoadError
	if errors.As(err, &le) {
		adminError(w, http.StatusBadRequest, "invalid mocks", le.Problems)
		return
	}
	adminError(w, http.StatusBadRequest, err.Error(), nil)
}
