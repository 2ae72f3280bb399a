package wiremock

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/acme/app/mock"
)

// maxBody bounds the request body read to match bodyPatterns.
const maxBody = 32 << 20

// StartedState is the state every scenario starts in (and returns to on reset).
const StartedState = "Started"

// stub is one mapping, compiled.
type stub struct {
	label    string
	priority int
	order    int // load order: a later mapping wins among equal priorities

	method     string
	url        urlMatch
	tmpl       *pathTemplate
	pathParams []namedMatcher
	query      []namedMatcher
	headers    []namedMatcher
	cookies    []namedMatcher
	body       []*bodyMatcher

	scenario, required, newState string

	answer *answer
}

// answer is a mapping's response, with its body read and encoded at load.
type answer struct {
	status  int
	message string // statusMessage
	header  http.Header
	body    []byte
	json    bool
	delay   delay
	fault   string
}

type delay struct {
	kind  string // "", fixed, uniform, lognormal
	a, b  time.Duration
	sigma float64
}

// pick draws one delay.
func (d delay) pick() time.Duration {
	switch d.kind {
	case "fixed":
		return d.a
	case "uniform":
		if d.b <= d.a {
			return d.a
		}
		return d.a + time.Duration(rand.Int64N(int64(d.b-d.a)+1))
	case "lognormal":
		v := time.Duration(float64(d.a) * math.Exp(d.sigma*rand.NormFloat64()))
		if d.b > 0 && v > d.b {
			v = d.b
		}
		return v
	}
	return 0
}

// Stubs serves a loaded mapping directory. It is safe for concurrent use.
type Stubs struct {
	byPath   map[string][]*stub // url and urlPath mappings, by path, best first
	others   []*stub            // every other mapping, best first
	urls     []string           // for suggestions on a miss
	needBody bool

	mu     sync.Mutex
	states map[string]string // scenario → state; absent: Started

	defaultDelay atomic.Pointer[func() time.Duration]
}

// SetDefaultDelay sets the delay of the answers of mappings that have no delay of their own,
// drawn for each answer (nil: none): a server's global delay. A mapping's own
// fixedDelayMilliseconds or delayDistribution replaces it. It is safe while serving.
func (s *Stubs) SetDefaultDelay(d func() time.Duration) {
	if d == nil {
		s.defaultDelay.Store(nil)
		return
	}
	s.defaultDelay.Store(&d)
}

// rank orders stubs as WireMock does: lowest priority number first, then the one added last.
func rank(a, b *stub) int {
	if a.priority != b.priority {
		return a.priority - b.priority
	}
	return b.order - a.order
}

func newStubs(list []*stub) *Stubs {
	s := &Stubs{byPath: map[string][]*stub{}, states: map[string]string{}}
	list = slices.Clone(list)
	slices.SortStableFunc(list, rank)
	for _, st := range list {
		switch st.url.kind {
		case urlExact:
			p, _, _ := strings.Cut(st.url.s, "?")
			s.byPath[p] = append(s.byPath[p], st)
		case urlPathExact:
			s.byPath[st.url.s] = append(s.byPath[st.url.s], st)
		default:
			s.others = append(s.others, st)
		}
		if len(st.body) > 0 {
			s.needBody = true
		}
		u := st.url.s
		if st.url.re != nil {
			u = st.url.re.String()
		}
		s.urls = append(s.urls, st.method+" "+u)
	}
	return s
}

// Len is the number of mappings served.
func (s *Stubs) Len() int { return len(s.urls) }

// ResetScenarios puts every scenario back in its Started state (WireMock's
// POST /__admin/scenarios/reset).
func (s *Stubs) ResetScenarios() {
	s.mu.Lock()
	clear(s.states)
	s.mu.Unlock()
}

// scenarioOK reports whether st's scenario is in the state st requires.
func (s *Stubs) scenarioOK(st *stub) bool {
	if st.required == "" {
		return true
	}
	s.mu.Lock()
	state, ok := s.states[st.scenario]
	s.mu.Unlock()
	if !ok {
		state = StartedState
	}
	return state == st.required
}

// find returns the best mapping for r, or nil.
func (s *Stubs) find(r *http.Request, body []byte) *stub {
	var parsed jsonBody
	var best *stub
	for _, st := range s.byPath[r.URL.EscapedPath()] {
		if st.matchRequest(r, body, &parsed) && s.scenarioOK(st) {
			best = st
			break
		}
	}
	for _, st := range s.others {
		if best != nil && rank(st, best) > 0 {
			break
		}
		if st.matchRequest(r, body, &parsed) && s.scenarioOK(st) {
			best = st
			break
		}
	}
	return best
}

// ServeHTTP answers r from the best mapping; a miss answers as WireMock does (404, text).
func (s *Stubs) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.serve(w, r, nil) }

// Handler answers from the mappings and passes misses to next (nil: WireMock's 404).
func (s *Stubs) Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { s.serve(w, r, next) })
}

// ServeNext answers r from the mappings and passes a miss to next (nil: WireMock's 404).
func (s *Stubs) ServeNext(w http.ResponseWriter, r *http.Request, next http.Handler) {
	s.serve(w, r, next)
}

func (s *Stubs) serve(w http.ResponseWriter, r *http.Request, next http.Handler) {
	var body []byte
	if s.needBody && r.Body != nil && r.Body != http.NoBody {
		b, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
		if err != nil || len(b) > maxBody {
			http.Error(w, "request body unreadable or over 32 MB", http.StatusRequestEntityTooLarge)
			return
		}
		body = b
		r.Body = io.NopCloser(bytes.NewReader(b))
	}
	st := s.find(r, body)
	if st == nil {
		if next != nil {
			next.ServeHTTP(w, r)
			return
		}
		s.miss(w, r)
		return
	}
	if st.newState != "" {
		s.mu.Lock()
		s.states[st.scenario] = st.newState
		s.mu.Unlock()
	}
	a := st.answer
	d := a.delay.pick()
	if f := s.defaultDelay.Load(); f != nil && a.delay.kind == "" {
		d = (*f)()
	}
	if d > 0 {
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			return
		}
	}
	if a.fault != "" {
		closeConnection(w)
		return
	}
	if a.message != "" {
		if writeRaw(w, r, a) {
			return
		}
	}
	h := w.Header()
	for k, v := range a.header { // Content-Length included
		h[k] = v
	}
	w.WriteHeader(a.status)
	if r.Method != http.MethodHead {
		_, _ = w.Write(a.body)
	}
}

// miss answers 404 "Request was not matched" with the closest mappings, as text.
func (s *Stubs) miss(w http.ResponseWriter, r *http.Request) {
	var b strings.Builder
	fmt.Fprintf(&b, "Request was not matched\n\n%s %s\n", r.Method, r.URL.RequestURI())
	if closest := s.Closest(r.Method+" "+r.URL.EscapedPath(), 3); len(closest) > 0 {
		b.WriteString("\nClosest stubs:\n")
		for _, c := range closest {
			fmt.Fprintf(&b, "  %s\n", c)
		}
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusNotFound)
	_, _ = io.WriteString(w, b.String())
}

// closeConnection answers a fault: the connection is closed without an answer.
func closeConnection(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(http.ErrAbortHandler) // HTTP/2: abort the stream
	}
	_ = conn.Close()
}

// writeRaw answers with a custom reason phrase (statusMessage), which net/http's writer
// cannot send: the status line and headers go out through net/http's own header writer on
// the hijacked connection, which is then closed. It returns false when the connection
// cannot be taken over (HTTP/2), and the answer goes out with the standard phrase.
func writeRaw(w http.ResponseWriter, r *http.Request, a *answer) bool {
	conn, rw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return false
	}
	defer conn.Close()
	if rw == nil {
		rw = bufio.NewReadWriter(bufio.NewReader(conn), bufio.NewWriter(conn))
	}
	h := a.header.Clone()
	h.Set("Content-Length", strconv.Itoa(len(a.body)))
	h.Set("Connection", "close")
	h.Set("Date", time.Now().UTC().Format(http.TimeFormat))
	fmt.Fprintf(rw, "HTTP/1.1 %03d %s\r\n", a.status, a.message)
	_ = h.Write(rw)
	_, _ = rw.WriteString("\r\n")
	if r.Method != http.MethodHead {
		_, _ = rw.Write(a.body)
	}
	_ = rw.Flush()
	return true
}

// Closest returns the labels of up to n stubs whose URLs are nearest to url (for a miss).
func (s *Stubs) Closest(url string, n int) []string {
	return mock.Closest(s.urls, url, n)
}
