package mockserver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/acme/app/mock"
	"github.com/acme/app/mock/mockfile"
	"github.com/acme/app/mock/openapi"
	"github.com/acme/app/mock/wiremock"
)

// AdminPrefix is where the admin API lives.
const AdminPrefix = "/__mock/"

// Options configures a Server.
type Options struct {
	// File is the mock file (YAML or JSON). Empty serves API, the built-in mock of this
	// project's own /api (or, with no API, proxies everything to Target).
	File string
	// API answers every request no mock matches when File is empty: the real API handler
	// (httpapi.NewServer) over a throwaway store, built by the caller. Mocks added through the
	// admin API still answer first.
	API http.Handler
	// Target is where unmatched requests are proxied; nil answers them 404 ROUTE_MATCH_FAILED.
	Target *url.URL
	// Delay, when set, overrides the file's config.delay.
	Delay *mock.Delay
	// Record, when set, names a file every proxied exchange is written to as a mock.
	Record string
	// RecordSecrets keeps tokens, passwords and keys in recorded answers (redacted otherwise).
	RecordSecrets bool
	// CORSOrigins are origins (besides the file's config.cors.origins) whose requests get
	// their origin echoed with credentials allowed; any other origin gets "*".
	CORSOrigins []string
	// NoCORS turns off the CORS headers and preflight answers (on by default).
	NoCORS bool
	// OpenAPI are OpenAPI 3.0/3.1 descriptions (YAML or JSON) whose operations are served,
	// answered and validated as Prism does; the file's mocks win where both have a route.
	OpenAPI []string
	// Dynamic makes the descriptions answer generated data by default; Seed seeds it (0:
	// from the clock).
	Dynamic bool
	Seed    uint64
	// WireMock is a directory of WireMock stub mappings (mappings/*.json, __files/) served
	// before the mocks; it wins over the file's wiremock key.
	WireMock string
	// AdminToken, when set, is the bearer token every admin request must carry.
	AdminToken string
	// LogRequests logs every request the interceptor answers.
	LogRequests bool
	// Logger receives reloads, record writes and request logs. Default slog.Default().
	Logger *slog.Logger
	// OnReload, when set, is told the outcome of every reload (tests).
	OnReload func(error)
	// Transport is what the proxy uses to reach Target (tests). Default http.DefaultTransport.
	Transport http.RoundTripper
}

// overrides are the runtime settings (flags and PATCH /__mock/config) that outlive reloads.
type overrides struct {
	delay    *mock.Delay
	enabled  *bool
	fallback *bool
}

// Server is `app mock serve`: a mock.Interceptor fed from a mock file (or the built-in /api
// mock), with reload, record, an admin API and CORS around it. It is an http.Handler.
type Server struct {
	opts  Options
	log   *slog.Logger
	ic    *mock.Interceptor
	admin http.Handler

	mu      sync.Mutex    // guards the fields below and serialises reconfiguration
	set     *mockfile.Set // the file's (or the built-in) mocks
	specs   *specRoutes   // the OpenAPI descriptions' routes (nil: none)
	runtime map[string]mockfile.Route
	removed map[string]bool
	// runtimeSets are the sets of mocks added through the admin API (their sequences).
	runtimeSets []*mockfile.Set
	ovr         overrides
	loaded      time.Time

	// cors is mock.CORSHandler around serveMocks, rebuilt when the file's origins change.
	cors atomic.Pointer[http.Handler]
	// wm are the WireMock mappings (nil: none); wmProblems what they could not serve.
	wm         atomic.Pointer[wiremock.Stubs]
	wmProblems []wiremock.Problem
	wmDir      string // the directory wm was loaded from
	// next answers what the WireMock mappings miss: the interceptor, or nil (WireMock's own
	// 404) when there is nothing else to serve.
	next http.Handler
}

// New loads the mock file (a *mockfile.LoadError when it is invalid) and builds the server.
func New(opts Options) (*Server, error) {
	s := &Server{opts: opts, log: opts.Logger, runtime: map[string]mockfile.Route{}, removed: map[string]bool{}}
	if s.log == nil {
		s.log = slog.Default()
	}
	var set *mockfile.Set
	if opts.File != "" {
		var err error
		if set, err = mockfile.LoadFile(opts.File); err != nil {
			return nil, err
		}
	} else {
		if opts.API == nil && opts.Target == nil && opts.WireMock == "" && len(opts.OpenAPI) == 0 {
			return nil, errors.New("mockserver: nothing to serve: no file, no API handler, no target, no OpenAPI description and no WireMock mappings")
		}
		set = &mockfile.Set{Config: mock.DefaultConfig()}
	}
	if len(opts.OpenAPI) > 0 {
		specs, err := loadSpecs(opts.OpenAPI, s.specOptions(), s.log)
		if err != nil {
			return nil, err
		}
		s.specs = specs
	}
	s.ovr.delay = opts.Delay
	icOpts := []mock.Option{mock.WithLogger(s.log)}
	if opts.API != nil {
		icOpts = append(icOpts, mock.WithFallback(opts.API))
	} else if len(opts.OpenAPI) > 0 && opts.Target == nil {
		icOpts = append(icOpts, mock.WithFallback(openapi.NotFound()))
	}
	if opts.Target != nil {
		rt := opts.Transport
		if rt == nil {
			rt = http.DefaultTransport
		}
		if opts.Record != "" {
			rec, err := newRecorder(opts.Record, opts.Target, rt, s.log, opts.RecordSecrets)
			if err != nil {
				return nil, err
			}
			rt = rec
		}
		icOpts = append(icOpts, mock.WithTarget(opts.Target), mock.WithTransport(rt))
	} else if opts.Record != "" {
		return nil, errors.New("--record needs --target: only proxied exchanges are recorded")
	}
	s.ic = mock.New(mock.DefaultConfig(), icOpts...)
	if err := s.apply(set); err != nil {
		_ = s.ic.Close()
		return nil, err
	}
	if opts.File != "" || opts.API != nil || opts.Target != nil || len(opts.OpenAPI) > 0 {
		s.next = s.ic
	}
	dir := s.wireMockDir(set)
	stubs, problems, err := s.readWireMock(dir, false)
	if err != nil {
		_ = s.ic.Close()
		return nil, err
	}
	s.storeWireMock(dir, stubs, problems)
	s.admin = s.adminHandler()
	return s, nil
}

// wireMockDir is the directory of WireMock mappings served beside set: --wiremock, else the
// file's wiremock key ("" for none).
func (s *Server) wireMockDir(set *mockfile.Set) string {
	if s.opts.WireMock != "" {
		return s.opts.WireMock
	}
	return set.WireMock
}

// WireMockLoadError is why a reload kept the previous WireMock mappings: mapping files that
// were read before and can no longer be read or parsed (an editor half-way through saving
// one, a checkout under way). The next change that leaves them whole reloads as usual.
type WireMockLoadError struct {
	Dir      string
	Problems []wiremock.Problem // the files that broke (Problem.Unreadable)
}

func (e *WireMockLoadError) Error() string {
	msg := fmt.Sprintf("wiremock %s: %s", e.Dir, e.Problems[0].String())
	if n := len(e.Problems) - 1; n > 0 {
		msg += fmt.Sprintf(" (and %d more)", n)
	}
	return msg
}

// readWireMock loads the mappings of dir. On a reload of the same directory, a mapping file
// that was whole in the mappings served now and is unreadable in the new ones fails the load
// with a *WireMockLoadError, so the mappings served stay; files that were already unreadable
// (and reported when they were loaded) do not. Callers hold s.mu or own s.
func (s *Server) readWireMock(dir string, reload bool) (*wiremock.Stubs, []wiremock.Problem, error) {
	if dir == "" {
		return nil, nil, nil
	}
	stubs, problems, err := wiremock.Load(dir)
	if err != nil {
		return nil, nil, err
	}
	if reload && dir == s.wmDir {
		known := map[string]bool{}
		for _, p := range s.wmProblems {
			if p.Unreadable {
				known[p.File] = true
			}
		}
		var broke []wiremock.Problem
		for _, p := range problems {
			if p.Unreadable && !known[p.File] {
				broke = append(broke, p)
			}
		}
		if len(broke) > 0 {
			return nil, nil, &WireMockLoadError{Dir: dir, Problems: broke}
		}
	}
	return stubs, problems, nil
}

// storeWireMock serves stubs (nil: none), the mappings of dir, logging what they cannot
// serve. Callers hold s.mu or own s.
func (s *Server) storeWireMock(dir string, stubs *wiremock.Stubs, problems []wiremock.Problem) {
	for _, p := range problems {
		s.log.Warn("wiremock mapping not served", "problem", p.String())
	}
	if stubs != nil {
		// the global delay (--delay, config.delay, PATCH /__mock/config) as the mocks have it
		stubs.SetDefaultDelay(func() time.Duration { return s.ic.Delay().Pick() })
	}
	s.wm.Store(stubs)
	s.wmDir, s.wmProblems = dir, problems
}

// WireMockProblems returns what the WireMock mappings ask for and the server does not do.
func (s *Server) WireMockProblems() []wiremock.Problem {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.wmProblems
}

// WireMockMappings is the number of WireMock mappings served.
func (s *Server) WireMockMappings() int {
	if wm := s.wm.Load(); wm != nil {
		return wm.Len()
	}
	return 0
}

// config returns the interceptor configuration for set under the flags and overrides.
func (s *Server) config(set *mockfile.Set) mock.Config {
	cfg := set.Config
	if (s.opts.Target != nil || s.opts.API != nil || len(s.opts.OpenAPI) > 0) && !set.FallbackSet {
		cfg.FallbackToNetwork = true
	}
	if s.opts.LogRequests {
		cfg.Logging.Enabled, cfg.Logging.LogRequests, cfg.Logging.LogResponses = true, true, true
	}
	if s.ovr.delay != nil {
		cfg.Delay = *s.ovr.delay
	}
	if s.ovr.enabled != nil {
		cfg.Enabled = *s.ovr.enabled
	}
	if s.ovr.fallback != nil {
		cfg.FallbackToNetwork = *s.ovr.fallback
	}
	cfg.Cache.Routes = set.CacheRoutes()
	for _, r := range s.specs.visible(set.Definitions()) {
		// a description's answer depends on Prefer, Accept and credentials, which the cache key
		// does not hold, and may be generated: never cached
		cfg.Cache.Routes[r.Key] = mock.RouteCache{Off: true}
	}
	for k, r := range s.runtime {
		cfg.Cache.Routes[k] = r.Cache
	}
	return cfg
}

// definitions merges the set, minus removed routes, with the runtime mocks (which win).
func (s *Server) definitions(set *mockfile.Set) mock.Definitions {
	file := set.Definitions()
	defs := mock.Definitions{}
	for _, r := range s.specs.visible(file) {
		defs[r.Key] = r.Handler
	}
	for k, h := range file {
		defs[k] = h
	}
	for k := range s.removed {
		delete(defs, k)
	}
	for k, r := range s.runtime {
		defs[k] = r.Handler
	}
	return defs
}

// apply swaps set in. The interceptor takes the new configuration and routes as one
// snapshot: requests in flight finish on the old one. Callers hold s.mu or own s.
func (s *Server) apply(set *mockfile.Set) error {
	if err := s.ic.Configure(s.config(set), s.definitions(set)); err != nil {
		var me *mock.Error
		if errors.As(err, &me) && me.Validation != nil {
			le := &mockfile.LoadError{File: s.opts.File}
			for _, e := range me.Validation.Errors {
				le.Problems = append(le.Problems, mockfile.Problem{Route: e.Route, Code: e.Code, Message: e.Message, Severity: mock.SeverityError})
			}
			return le
		}
		return err
	}
	s.set = set
	s.loaded = time.Now()
	h := mock.CORSHandler(s.corsOptions(set), http.HandlerFunc(s.serveMocks))
	s.cors.Store(&h)
	return nil
}

// ServeHTTP answers CORS preflights, the admin API under /__mock/, and everything else from
// the mocks (or the target).
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, AdminPrefix) || r.URL.Path == "/__mock" || r.URL.Path == wiremockReset {
		s.admin.ServeHTTP(w, r) // never CORS: no other origin may read or drive it
		return
	}
	if s.opts.NoCORS {
		s.serveMocks(w, r)
		return
	}
	(*s.cors.Load()).ServeHTTP(w, r)
}

// corsOptions is the CORS of the served answers (mock.CORSHandler): an origin listed in
// --cors-origin or config.cors.origins is echoed with credentials allowed, so a front end on
// another port works with cookies and Authorization headers alike; any other origin gets "*"
// without credentials, so no page can read an answer as the user. Preflights are answered
// for every path, with the requested headers echoed.
func (s *Server) corsOptions(set *mockfile.Set) mock.CORSOptions {
	origins := append(append(append([]string{}, s.opts.CORSOrigins...), set.CORSOrigins...), "*")
	return mock.CORSOptions{
		AllowOrigins:     origins,
		AllowMethods:     []string{"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"},
		AllowHeaders:     []string{"*"},
		ExposeHeaders:    []string{"*"},
		AllowCredentials: true,
		MaxAge:           10 * time.Minute,
	}
}

// serveMocks answers from the WireMock mappings, then the interceptor (mocks, API, target).
func (s *Server) serveMocks(w http.ResponseWriter, r *http.Request) {
	if wm := s.wm.Load(); wm != nil {
		wm.ServeNext(w, r, s.next)
		return
	}
	s.ic.ServeHTTP(w, r)
}

// Reload re-reads the mock file, the OpenAPI descriptions and the WireMock mappings. Valid
// ones are swapped in atomically; when one is invalid the current mocks stay and Reload
// returns why (a *mockfile.LoadError, an *openapi.LoadError or a *WireMockLoadError).
func (s *Server) Reload() error {
	if s.opts.File == "" && len(s.opts.OpenAPI) == 0 && s.opts.WireMock != "" {
		return s.reloadWireMock() // the mappings are all there is to re-read
	}
	if s.opts.File == "" && len(s.opts.OpenAPI) == 0 {
		return errors.New("the built-in mock has no file to reload")
	}
	var (
		set   *mockfile.Set
		specs *specRoutes
		err   error
	)
	if s.opts.File != "" {
		set, err = mockfile.LoadFile(s.opts.File)
	}
	if err == nil && len(s.opts.OpenAPI) > 0 {
		specs, err = loadSpecs(s.opts.OpenAPI, s.specOptions(), s.log)
	}
	if err == nil {
		s.mu.Lock()
		if set == nil {
			set = s.set
		}
		// the mappings first: a bad reload of them keeps the file's previous mocks too, so
		// the server never serves a new file beside stale mappings
		dir := s.wireMockDir(set)
		var (
			stubs    *wiremock.Stubs
			problems []wiremock.Problem
		)
		if stubs, problems, err = s.readWireMock(dir, true); err == nil {
			removed, oldSpecs := s.removed, s.specs
			s.removed = map[string]bool{} // the file is the truth again: removed file mocks come back
			if specs != nil {
				s.specs = specs
			}
			if err = s.apply(set); err != nil {
				s.removed, s.specs = removed, oldSpecs
			} else {
				s.storeWireMock(dir, stubs, problems)
			}
		}
		s.mu.Unlock()
	}
	what := strings.Join(append([]string{s.opts.File}, s.opts.OpenAPI...), ", ")
	if err != nil {
		s.log.Error("mocks not reloaded; keeping the previous ones", "files", strings.TrimPrefix(what, ", "), "err", err)
	} else {
		s.log.Info("mocks reloaded", "files", strings.TrimPrefix(what, ", "), "routes", len(s.ic.Mocks()))
		for _, w := range set.Warnings {
			s.log.Warn("mock file", "warning", w.String())
		}
	}
	if s.opts.OnReload != nil {
		s.opts.OnReload(err)
	}
	return err
}

// maxWatchedDirs bounds the directories Watch watches under a WireMock directory (mappings/
// and __files/ with their subdirectories): each costs an inotify watch, a per-user resource.
const maxWatchedDirs = 1000

// Watch reloads the mock file, the OpenAPI descriptions and the WireMock mappings (--wiremock
// or the file's wiremock key: mappings/*.json and __files/) whenever one of them changes,
// until ctx ends. It watches their directories, so editors that save by renaming a new file
// over the old one are seen too; bursts of events within 100 ms make one reload. A change to
// the mappings alone reloads the mappings alone.
func (s *Server) Watch(ctx context.Context) error {
	files := append([]string{}, s.opts.OpenAPI...)
	if s.opts.File != "" {
		files = append(files, s.opts.File)
	}
	s.mu.Lock()
	if s.specs != nil {
		for _, spec := range s.specs.specs {
			files = append(files, spec.Files()...) // the files its references name, too
		}
	}
	wmDir := s.wireMockDir(s.set)
	s.mu.Unlock()
	if len(files) == 0 && wmDir == "" {
		return errors.New("--watch needs --file, --openapi or --wiremock")
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("watch: %w", err)
	}
	watched := map[string]bool{}
	dirs := map[string]bool{}
	for _, f := range files {
		abs, err := filepath.Abs(f)
		if err != nil {
			w.Close()
			return fmt.Errorf("watch %s: %w", f, err)
		}
		watched[abs] = true
		if dir := filepath.Dir(abs); !dirs[dir] {
			dirs[dir] = true
			if err := w.Add(dir); err != nil {
				w.Close()
				return fmt.Errorf("watch %s: %w", dir, err)
			}
		}
	}
	wm := &wireMockWatch{w: w, log: s.log, shared: dirs}
	if err := wm.watch(wmDir); err != nil {
		w.Close()
		return err
	}
	go func() {
		defer w.Close()
		var timer *time.Timer
		fire := make(chan struct{}, 1)
		fileChanged, mappingsChanged := false, false
		for {
			select {
			case <-ctx.Done():
				if timer != nil {
					timer.Stop()
				}
				return
			case ev, ok := <-w.Events:
				if !ok {
					return
				}
				if !ev.Has(fsnotify.Write | fsnotify.Create | fsnotify.Rename | fsnotify.Remove) {
					continue
				}
				switch {
				case watched[filepath.Clean(ev.Name)] && !ev.Has(fsnotify.Remove):
					fileChanged = true
				case wm.changed(ev):
					mappingsChanged = true
				default:
					continue
				}
				if timer != nil {
					timer.Stop()
				}
				timer = time.AfterFunc(100*time.Millisecond, func() {
					select {
					case fire <- struct{}{}:
					default:
					}
				})
			case <-fire:
				if fileChanged {
					_ = s.reloadChanged() // the mappings too
				} else if mappingsChanged {
					_ = s.reloadWireMock()
				}
				fileChanged, mappingsChanged = false, false
				s.mu.Lock()
				dir := s.wireMockDir(s.set) // the file's wiremock key may name another now
				s.mu.Unlock()
				if err := wm.watch(dir); err != nil {
					s.log.Warn("watching the WireMock mappings", "dir", dir, "err", err)
				}
			case err, ok := <-w.Errors:
				if !ok {
					return
				}
				s.log.Warn("watching the mock files", "err", err)
			}
		}
	}()
	return nil
}

// wireMockWatch is the part of Watch that follows a WireMock directory: the directory, its
// mappings/ and __files/, and their subdirectories (fsnotify does not recurse), added as they
// are created. It is used by Watch's goroutine only.
type wireMockWatch struct {
	w      *fsnotify.Watcher
	log    *slog.Logger
	shared map[string]bool // directories watched for the mock files: never removed here
	root   string          // the WireMock directory, absolute ("" for none)
	dirs   map[string]bool // the directories added for it
}

// watch makes dir the WireMock directory watched, dropping the watches of the previous one.
func (m *wireMockWatch) watch(dir string) error {
	abs := ""
	if dir != "" {
		var err error
		if abs, err = filepath.Abs(dir); err != nil {
			return fmt.Errorf("watch %s: %w", dir, err)
		}
	}
	if abs == m.root {
		return nil
	}
	for d := range m.dirs {
		if !m.shared[d] {
			_ = m.w.Remove(d)
		}
	}
	m.root, m.dirs = abs, map[string]bool{}
	if abs == "" {
		return nil
	}
	if err := m.add(abs); err != nil {
		return err
	}
	for _, sub := range []string{"mappings", "__files"} {
		if err := m.addTree(filepath.Join(abs, sub)); err != nil {
			return err
		}
	}
	return nil
}

// add watches one directory.
func (m *wireMockWatch) add(dir string) error {
	if m.dirs[dir] {
		return nil
	}
	if len(m.dirs) >= maxWatchedDirs {
		return fmt.Errorf("watch %s: over %d directories under %s; changes below are not seen", dir, maxWatchedDirs, m.root)
	}
	if !m.shared[dir] {
		if err := m.w.Add(dir); err != nil {
			return fmt.Errorf("watch %s: %w", dir, err)
		}
	}
	m.dirs[dir] = true
	return nil
}

// addTree watches dir and the directories under it; a dir that does not exist (yet) is
// skipped: its creation in the directory above is seen.
func (m *wireMockWatch) addTree(dir string) error {
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if d.IsDir() {
			return m.add(p)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("watch %s: %w", dir, err)
	}
	return nil
}

// changed tells whether ev touches what the mappings are loaded from: a .json file under
// mappings/, anything under __files/, or one of those directories themselves. A directory
// created there is watched from now on.
func (m *wireMockWatch) changed(ev fsnotify.Event) bool {
	if m.root == "" {
		return false
	}
	name := filepath.Clean(ev.Name)
	rel, err := filepath.Rel(m.root, name)
	if err != nil || rel == "." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || rel == ".." {
		return false
	}
	top, _, nested := strings.Cut(filepath.ToSlash(rel), "/")
	if top != "mappings" && top != "__files" {
		return false
	}
	if ev.Has(fsnotify.Remove|fsnotify.Rename) && m.dirs[name] {
		delete(m.dirs, name) // its watch is gone; added again if it comes back
		return true
	}
	isDir := false
	if ev.Has(fsnotify.Create) {
		if st, err := os.Stat(name); err == nil && st.IsDir() {
			isDir = true
			if err := m.addTree(name); err != nil {
				m.log.Warn("watching the WireMock mappings", "err", err)
			}
		}
	}
	if !nested || isDir || top == "__files" {
		return true
	}
	return strings.EqualFold(filepath.Ext(name), ".json")
}

// reloadWireMock re-reads the WireMock mappings alone, after a change Watch saw under them
// (or POST /__mock/reload when they are all there is). Valid ones are swapped in; otherwise
// the current ones stay, and it logs and returns why (a *WireMockLoadError, or the error
// reading the directory).
func (s *Server) reloadWireMock() error {
	s.mu.Lock()
	dir := s.wireMockDir(s.set)
	stubs, problems, err := s.readWireMock(dir, true)
	if err == nil {
		s.storeWireMock(dir, stubs, problems)
	}
	s.mu.Unlock()
	if err != nil {
		s.log.Error("WireMock mappings not reloaded; keeping the previous ones", "dir", dir, "err", err)
	} else {
		s.log.Info("WireMock mappings reloaded", "dir", dir, "mappings", s.WireMockMappings())
	}
	if s.opts.OnReload != nil {
		s.opts.OnReload(err)
	}
	return err
}

// ErrEmptyFile is why a change seen by Watch did not reload: the mock file is empty.
var ErrEmptyFile = errors.New("the mock file is empty")

// reloadChanged reloads after a change Watch saw. A mock file found empty is taken for a
// passing state, not for a set of no routes: editors truncate a file before writing it
// again, and a reload then would answer 404 to every route until the next write. The
// previous mocks stay (logged, and told to OnReload as ErrEmptyFile); the write that follows
// reloads as usual.
func (s *Server) reloadChanged() error {
	if s.opts.File != "" {
		if b, err := os.ReadFile(s.opts.File); err == nil && len(bytes.TrimSpace(b)) == 0 {
			s.log.Warn("mocks not reloaded; the file is empty (being saved?), keeping the previous ones until it is written again", "file", s.opts.File)
			if s.opts.OnReload != nil {
				s.opts.OnReload(ErrEmptyFile)
			}
			return ErrEmptyFile
		}
	}
	return s.Reload()
}

// SpecRoutes lists the routes served from the OpenAPI descriptions now (the file's mocks
// shadow some), with the description each comes from.
func (s *Server) SpecRoutes() []openapi.Route {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.specs.visible(s.set.Definitions())
}

// RouteKeys lists the routes served now, sorted (mock.Interceptor.Mocks sorts them).
func (s *Server) RouteKeys() []string { return s.ic.Mocks() }

// Warnings returns the warnings of the loaded set.
func (s *Server) Warnings() []mockfile.Problem {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.set.Warnings
}

// Interceptor returns the interceptor behind the server.
func (s *Server) Interceptor() *mock.Interceptor { return s.ic }

// Close releases the interceptor (its cache files). A recorder has nothing to flush: it
// rewrites its file after every exchange.
func (s *Server) Close() error {
	return s.ic.Close()
}
