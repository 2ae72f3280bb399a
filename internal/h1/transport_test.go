package h1

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// hangBound is how long an operation that must be cut short (or an event that must happen)
// may take before a test calls it a hang. It bounds hangs only; it is not a timing assertion.
const hangBound = 5 * time.Second

// okAnswer is a complete keep-alive answer for the raw servers.
const okAnswer = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"

// isUnix reports whether probe_unix.go's socket probe is built in.
func isUnix() bool {
	switch runtime.GOOS {
	case "windows", "plan9", "js", "wasip1":
		return false
	}
	return true
}

// connStats counts a httptest server's connections.
type connStats struct {
	opened   atomic.Int32 // StateNew
	closed   atomic.Int32 // StateClosed or StateHijacked
	closedAt atomic.Int64 // UnixNano of the last close
}

type serverOpts struct {
	tls         bool
	idleTimeout time.Duration
}

// newServer starts a httptest server counting its connections, closed when the test ends.
func newServer(t testing.TB, o serverOpts, h http.HandlerFunc) (*httptest.Server, *connStats) {
	t.Helper()
	st := new(connStats)
	srv := httptest.NewUnstartedServer(h)
	srv.Config.IdleTimeout = o.idleTimeout
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		switch s {
		case http.StateNew:
			st.opened.Add(1)
		case http.StateClosed, http.StateHijacked:
			st.closedAt.Store(time.Now().UnixNano())
			st.closed.Add(1)
		}
	}
	if o.tls {
		srv.StartTLS()
	} else {
		srv.Start()
	}
	t.Cleanup(srv.Close)
	return srv, st
}

// newTransport returns tr set up for srv (its TLS roots), whose idle connections are closed
// when the test ends (before srv is closed, as cleanups run last-in first-out).
func newTransport(t testing.TB, srv *httptest.Server, tr *Transport) *Transport {
	t.Helper()
	if srv != nil && srv.TLS != nil {
		tr.TLSClientConfig = srv.Client().Transport.(*http.Transport).TLSClientConfig
	}
	t.Cleanup(tr.CloseIdleConnections)
	return tr
}

// idleLen is the number of pooled connections for rawURL's scheme and host.
func idleLen(tr *Transport, rawURL string) int {
	u, err := url.Parse(rawURL)
	if err != nil {
		panic(err)
	}
	key := connKey{https: u.Scheme == "https", addr: hostPort(u)}
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return len(tr.idle[key])
}

// idleTotal is the number of pooled connections for all hosts.
func idleTotal(tr *Transport) int {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	n := 0
	for _, conns := range tr.idle {
		n += len(conns)
	}
	return n
}

// waitFor polls cond until it holds, failing the test after hangBound.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(hangBound)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("still waiting after %v for %s", hangBound, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitClosed fails the test unless ch is closed within hangBound.
func waitClosed(t *testing.T, what string, ch <-chan struct{}) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(hangBound):
		t.Fatalf("still waiting after %v for %s", hangBound, what)
	}
}

// within runs f and fails the test unless it returns within hangBound (it then goes on in
// the background until the test's cleanup closes what it waits on).
func within(t *testing.T, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	waitClosed(t, what, done)
}

func newReq(t testing.TB, method, rawURL string, body io.Reader) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, rawURL, body)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// do sends req through rt and returns the answer with its whole body, read to EOF and closed.
func do(t *testing.T, rt http.RoundTripper, req *http.Request) (*http.Response, string) {
	t.Helper()
	resp, err := rt.RoundTrip(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatalf("%s %s: reading the body: %v", req.Method, req.URL, err)
	}
	return resp, string(b)
}

// get does a GET of rawURL through rt, failing the test unless the answer is 200 with want.
func get(t *testing.T, rt http.RoundTripper, rawURL, want string) {
	t.Helper()
	resp, body := do(t, rt, newReq(t, http.MethodGet, rawURL, nil))
	if resp.StatusCode != http.StatusOK || body != want {
		t.Fatalf("GET %s: %d %q, want 200 %q", rawURL, resp.StatusCode, body, want)
	}
}

// rawServer is a TCP server for exact wire control: serve handles the i-th accepted
// connection (from 0). It is closed, with all its connections, when the test ends.
type rawServer struct {
	ln      net.Listener
	accepts atomic.Int32
	mu      sync.Mutex
	conns   []net.Conn
	closed  bool
	wg      sync.WaitGroup
}

func newRawServer(t testing.TB, serve func(i int, c net.Conn)) *rawServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &rawServer{ln: ln}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			i := int(s.accepts.Add(1)) - 1
			s.mu.Lock()
			if s.closed {
				s.mu.Unlock()
				c.Close()
				return
			}
			s.conns = append(s.conns, c)
			s.wg.Add(1)
			s.mu.Unlock()
			go func() {
				defer s.wg.Done()
				defer c.Close()
				serve(i, c)
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		s.mu.Lock()
		s.closed = true
		for _, c := range s.conns {
			c.Close()
		}
		s.mu.Unlock()
		s.wg.Wait()
	})
	return s
}

func (s *rawServer) URL() string { return "http://" + s.ln.Addr().String() + "/" }

// newOKServer starts a raw keep-alive server answering okAnswer to every request, recording
// them in rec when it is not nil.
func newOKServer(t testing.TB, rec *recorder) *rawServer {
	return newRawServer(t, func(i int, c net.Conn) {
		serveRequests(c, func(j int, req *http.Request, body []byte) bool {
			if rec != nil {
				rec.add(i, req, body)
			}
			_, err := io.WriteString(c, okAnswer)
			return err == nil
		})
	})
}

// readRequest reads one request and all of its body from br.
func readRequest(br *bufio.Reader) (*http.Request, []byte, error) {
	req, err := http.ReadRequest(br)
	if err != nil {
		return nil, nil, err
	}
	body, err := io.ReadAll(req.Body)
	return req, body, err
}

// serveRequests reads the requests on c one after another and calls answer with each (j
// counts them from 0), until answer returns false or the connection ends.
func serveRequests(c net.Conn, answer func(j int, req *http.Request, body []byte) bool) {
	br := bufio.NewReader(c)
	for j := 0; ; j++ {
		req, body, err := readRequest(br)
		if err != nil {
			return
		}
		if !answer(j, req, body) {
			return
		}
	}
}

// seenReq is a request a raw server received.
type seenReq struct {
	conn   int
	method string
	body   string
	header http.Header
}

// recorder keeps the requests a raw server received.
type recorder struct {
	mu   sync.Mutex
	reqs []seenReq
}

func (r *recorder) add(conn int, req *http.Request, body []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reqs = append(r.reqs, seenReq{conn: conn, method: req.Method, body: string(body), header: req.Header})
}

func (r *recorder) all() []seenReq {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]seenReq(nil), r.reqs...)
}

// closeRecorder is a request body that records whether it was closed.
type closeRecorder struct {
	io.Reader
	closed atomic.Bool
}

func (b *closeRecorder) Close() error {
	b.closed.Store(true)
	return nil
}

// barrier is a handler that answers body once n requests are in flight together, so that n
// concurrent requests need n connections.
func barrier(n int32, body string) http.HandlerFunc {
	var arrived atomic.Int32
	all := make(chan struct{})
	return func(w http.ResponseWriter, r *http.Request) {
		if arrived.Add(1) == n {
			close(all)
		}
		select {
		case <-all:
			io.WriteString(w, body)
		case <-time.After(hangBound):
			http.Error(w, "the other requests never arrived", http.StatusInternalServerError)
		}
	}
}

// getConcurrently does n GETs of rawURL at once, each read to EOF, and fails the test unless
// all got 200 with want.
func getConcurrently(t *testing.T, rt http.RoundTripper, rawURL string, n int, want string) {
	t.Helper()
	errs := make(chan error, n)
	for range n {
		go func() {
			resp, err := rt.RoundTrip(newReq(t, http.MethodGet, rawURL, nil))
			if err != nil {
				errs <- err
				return
			}
			b, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err == nil && (resp.StatusCode != http.StatusOK || string(b) != want) {
				err = fmt.Errorf("got %d %q, want 200 %q", resp.StatusCode, b, want)
			}
			errs <- err
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
}

// TestKeepAliveReuse pins that answers read to their end, whatever their framing and however
// they are read, leave one connection carrying all the requests.
func TestKeepAliveReuse(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("0123456789abcdef", 8<<10) // 128 KiB: many reads through the 4 KiB buffer
	readAll := func(resp *http.Response) ([]byte, error) { return io.ReadAll(resp.Body) }
	readFull := func(resp *http.Response) ([]byte, error) {
		// Exactly ContentLength bytes and no further Read: only the io.EOF that net/http
		// returns with the last bytes can release the connection.
		buf := make([]byte, resp.ContentLength)
		_, err := io.ReadFull(resp.Body, buf)
		return buf, err
	}
	tests := []struct {
		name    string
		body    string
		chunked bool // the handler flushes as it writes: Transfer-Encoding: chunked
		read    func(*http.Response) ([]byte, error)
	}{
		{"content-length/ReadAll", "hello", false, readAll},
		{"content-length/ReadFull small", "hello", false, readFull},
		{"content-length/ReadFull big", big, false, readFull},
		{"chunked/ReadAll small", "hello", true, readAll},
		{"chunked/ReadAll big", big, true, readAll},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv, st := newServer(t, serverOpts{}, func(w http.ResponseWriter, r *http.Request) {
				body := r.URL.Query().Get("i") + ":" + tc.body
				if !tc.chunked {
					w.Header().Set("Content-Length", strconv.Itoa(len(body)))
					io.WriteString(w, body)
					return
				}
				for len(body) > 0 { // flushed pieces of up to 1000 bytes: several chunks
					n := min(len(body), 1000)
					io.WriteString(w, body[:n])
					w.(http.Flusher).Flush()
					body = body[n:]
				}
			})
			tr := newTransport(t, srv, &Transport{})
			for i := range 5 {
				want := strconv.Itoa(i) + ":" + tc.body
				resp, err := tr.RoundTrip(newReq(t, http.MethodGet, srv.URL+"/?i="+strconv.Itoa(i), nil))
				if err != nil {
					t.Fatalf("request %d: %v", i, err)
				}
				if tc.chunked && (resp.ContentLength != -1 || len(resp.TransferEncoding) != 1 || resp.TransferEncoding[0] != "chunked") {
					t.Fatalf("request %d: ContentLength %d, TransferEncoding %q: the answer is not chunked", i, resp.ContentLength, resp.TransferEncoding)
				}
				if !tc.chunked && resp.ContentLength != int64(len(want)) {
					t.Fatalf("request %d: ContentLength %d, want %d", i, resp.ContentLength, len(want))
				}
				got, err := tc.read(resp)
				resp.Body.Close()
				if err != nil {
					t.Fatalf("request %d: reading the body: %v", i, err)
				}
				if resp.StatusCode != http.StatusOK || string(got) != want {
					t.Fatalf("request %d: %d, body of %d bytes %.20q, want 200 and %d bytes %.20q", i, resp.StatusCode, len(got), got, len(want), want)
				}
				if n := idleLen(tr, srv.URL); n != 1 {
					t.Fatalf("after request %d: %d idle connections, want 1", i, n)
				}
			}
			if n := st.opened.Load(); n != 1 {
				t.Errorf("5 sequential requests opened %d connections, want 1", n)
			}
		})
	}
}

// TestBodyClosedBeforeEOF pins that an answer not read to its end costs its connection: the
// connection is closed, not pooled, and the next request dials anew.
func TestBodyClosedBeforeEOF(t *testing.T) {
	t.Parallel()
	body := strings.Repeat("x", 64<<10)
	for _, read := range []int{0, 1, 100, len(body) - 1} {
		t.Run(fmt.Sprintf("read %d of %d", read, len(body)), func(t *testing.T) {
			t.Parallel()
			srv, st := newServer(t, serverOpts{}, func(w http.ResponseWriter, r *http.Request) {
				io.WriteString(w, body)
			})
			tr := newTransport(t, srv, &Transport{})
			resp, err := tr.RoundTrip(newReq(t, http.MethodGet, srv.URL, nil))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := io.ReadFull(resp.Body, make([]byte, read)); err != nil {
				t.Fatalf("reading %d bytes: %v", read, err)
			}
			if err := resp.Body.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			if n := idleLen(tr, srv.URL); n != 0 {
				t.Fatalf("%d idle connections after an unfinished body, want 0", n)
			}
			waitFor(t, "the server to see the connection closed", func() bool { return st.closed.Load() == 1 })
			get(t, tr, srv.URL, body)
			if n := st.opened.Load(); n != 2 {
				t.Errorf("%d connections opened, want 2", n)
			}
		})
	}
}

// TestConnNotReused pins that "Connection: close" either way, an HTTP/1.0 answer without
// keep-alive, and bytes past the end of the answer keep the connection out of the pool even
// when the server leaves it open; the keep-alive row shows the connection is otherwise reused.
func TestConnNotReused(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		reqClose  bool
		answer    string
		wantConns int32
	}{
		{"keep-alive", false, okAnswer, 1},
		{"server says close", false, "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok", 2},
		{"request says close", true, okAnswer, 2},
		{"HTTP/1.0 answer", false, "HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok", 2},
		{"bytes past the answer", false, okAnswer + "HTTP/1.1 500 Stray\r\n", 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var rec recorder
			srv := newRawServer(t, func(i int, c net.Conn) {
				serveRequests(c, func(j int, req *http.Request, body []byte) bool {
					rec.add(i, req, body)
					_, err := io.WriteString(c, tc.answer) // and leave the connection open
					return err == nil
				})
			})
			tr := newTransport(t, nil, &Transport{})
			for i := range 2 {
				req := newReq(t, http.MethodGet, srv.URL(), nil)
				req.Close = tc.reqClose
				resp, body := do(t, tr, req)
				if resp.StatusCode != http.StatusOK || body != "ok" {
					t.Fatalf("request %d: %d %q", i, resp.StatusCode, body)
				}
				wantIdle := 0
				if tc.wantConns == 1 {
					wantIdle = 1
				}
				if n := idleLen(tr, srv.URL()); n != wantIdle {
					t.Fatalf("request %d: %d idle connections, want %d", i, n, wantIdle)
				}
			}
			if n := srv.accepts.Load(); n != tc.wantConns {
				t.Errorf("2 requests opened %d connections, want %d", n, tc.wantConns)
			}
			for _, r := range rec.all() {
				if got := r.header.Get("Connection"); (got == "close") != tc.reqClose {
					t.Errorf("the server got Connection: %q, with Request.Close %v", got, tc.reqClose)
				}
			}
		})
	}
}

// TestNoBodyAnswers pins that answers that cannot have a body give their connection back to
// the pool as soon as RoundTrip returns, and the next request reuses it.
func TestNoBodyAnswers(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		method  string
		handler http.HandlerFunc
		status  int
	}{
		{"HEAD with Content-Length", http.MethodHead, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "hello") }, 200},
		// net/http's server sends no Content-Length when the handler writes nothing: the
		// answer's ContentLength is -1, and the connection is still reusable.
		{"HEAD without Content-Length", http.MethodHead, func(w http.ResponseWriter, r *http.Request) {}, 200},
		{"204", http.MethodGet, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) }, 204},
		{"304", http.MethodGet, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNotModified) }, 304},
		{"empty 200", http.MethodGet, func(w http.ResponseWriter, r *http.Request) {}, 200},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv, st := newServer(t, serverOpts{}, tc.handler)
			tr := newTransport(t, srv, &Transport{})
			var bodies []io.Closer
			for i := range 3 {
				resp, err := tr.RoundTrip(newReq(t, tc.method, srv.URL, nil))
				if err != nil {
					t.Fatalf("request %d: %v", i, err)
				}
				bodies = append(bodies, resp.Body)
				if resp.StatusCode != tc.status {
					t.Fatalf("request %d: status %d, want %d", i, resp.StatusCode, tc.status)
				}
				// The body is neither read nor closed before the next request.
				if n := idleLen(tr, srv.URL); n != 1 {
					t.Fatalf("request %d: %d idle connections as RoundTrip returns, want 1", i, n)
				}
			}
			if n := st.opened.Load(); n != 1 {
				t.Errorf("3 requests opened %d connections, want 1", n)
			}
			for _, b := range bodies {
				b.Close()
			}
		})
	}
}

// TestInterimAnswers pins that 1xx answers before the real one are skipped, and that the
// connection is still reused after them.
func TestInterimAnswers(t *testing.T) {
	t.Parallel()
	const final = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX-Final: yes\r\n\r\nhello"
	const hints = "HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n"
	const cont = "HTTP/1.1 100 Continue\r\n\r\n"
	tests := []struct {
		name    string
		interim []string
	}{
		{"103 Early Hints", []string{hints}},
		{"100 Continue", []string{cont}},
		{"100 then 103", []string{cont, hints}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := newRawServer(t, func(i int, c net.Conn) {
				serveRequests(c, func(j int, req *http.Request, body []byte) bool {
					for _, s := range append(tc.interim, final) { // each in its own write
						if _, err := io.WriteString(c, s); err != nil {
							return false
						}
					}
					return true
				})
			})
			tr := newTransport(t, nil, &Transport{})
			for i := range 2 {
				resp, body := do(t, tr, newReq(t, http.MethodGet, srv.URL(), nil))
				if resp.StatusCode != http.StatusOK || body != "hello" || resp.Header.Get("X-Final") != "yes" {
					t.Fatalf("request %d: %d %q, header %v; want the final 200", i, resp.StatusCode, body, resp.Header)
				}
				if link := resp.Header.Get("Link"); link != "" {
					t.Errorf("request %d: the interim answer's Link %q leaked into the final header", i, link)
				}
			}
			if n := srv.accepts.Load(); n != 1 {
				t.Errorf("2 requests opened %d connections, want 1", n)
			}
		})
	}
}

// TestSwitchingProtocols pins that a 101 answer nobody asked for is an error and costs the
// connection.
func TestSwitchingProtocols(t *testing.T) {
	t.Parallel()
	gone := make(chan struct{})
	var once sync.Once
	srv := newRawServer(t, func(i int, c net.Conn) {
		serveRequests(c, func(j int, req *http.Request, body []byte) bool {
			io.WriteString(c, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
			return false
		})
		io.Copy(io.Discard, c) // until the client closes
		once.Do(func() { close(gone) })
	})
	tr := newTransport(t, nil, &Transport{})
	req := newReq(t, http.MethodGet, srv.URL(), nil)
	var resp *http.Response
	var err error
	within(t, "RoundTrip to return after a 101", func() { resp, err = tr.RoundTrip(req) })
	if err == nil {
		resp.Body.Close()
		t.Fatalf("a 101 answer gave status %d and no error", resp.StatusCode)
	}
	if n := idleLen(tr, srv.URL()); n != 0 {
		t.Errorf("%d idle connections after a 101, want 0", n)
	}
	waitClosed(t, "the client to close the connection", gone)
}

// TestRequestBodyAndHeaders pins what the server receives: the method, the body intact
// (however large), its framing, the caller's headers and the Host.
func TestRequestBodyAndHeaders(t *testing.T) {
	t.Parallel()
	mib := bytes.Repeat([]byte("0123456789abcdefghijklmnopqrstuv"), 32<<10) // 1 MiB
	type got struct {
		method, host, header string
		contentLength        int64
		transferEncoding     []string
		body                 []byte
	}
	tests := []struct {
		name      string
		method    string
		body      func() io.Reader
		host      string // Request.Host, if set
		wantBody  []byte
		wantCL    int64
		wantChunk bool
	}{
		{"GET", http.MethodGet, func() io.Reader { return nil }, "", nil, 0, false},
		{"POST small", http.MethodPost, func() io.Reader { return bytes.NewReader([]byte("small body")) }, "", []byte("small body"), 10, false},
		{"POST 1 MiB", http.MethodPost, func() io.Reader { return bytes.NewReader(mib) }, "", mib, int64(len(mib)), false},
		{"PUT strings.Reader", http.MethodPut, func() io.Reader { return strings.NewReader("put body") }, "", []byte("put body"), 8, false},
		{"POST empty", http.MethodPost, func() io.Reader { return bytes.NewReader(nil) }, "", nil, 0, false},
		{"POST unknown length", http.MethodPost, func() io.Reader { return io.MultiReader(bytes.NewReader(mib)) }, "", mib, -1, true},
		{"GET with Request.Host", http.MethodGet, func() io.Reader { return nil }, "virtual.example:8080", nil, 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			gotc := make(chan got, 1)
			srv, _ := newServer(t, serverOpts{}, func(w http.ResponseWriter, r *http.Request) {
				b, err := io.ReadAll(r.Body)
				if err != nil {
					http.Error(w, err.Error(), http.StatusBadRequest)
					return
				}
				gotc <- got{r.Method, r.Host, r.Header.Get("X-Test"), r.ContentLength, r.TransferEncoding, b}
				io.WriteString(w, "ok")
			})
			tr := newTransport(t, srv, &Transport{})
			req := newReq(t, tc.method, srv.URL+"/path?q=1", tc.body())
			req.Header.Set("X-Test", "value "+tc.name)
			req.Host = tc.host
			resp, body := do(t, tr, req)
			if resp.StatusCode != http.StatusOK || body != "ok" {
				t.Fatalf("%d %q", resp.StatusCode, body)
			}
			g := <-gotc
			wantHost := strings.TrimPrefix(srv.URL, "http://")
			if tc.host != "" {
				wantHost = tc.host
			}
			if g.method != tc.method || g.host != wantHost || g.header != "value "+tc.name {
				t.Errorf("the server got method %q, Host %q, X-Test %q; want %q, %q, %q", g.method, g.host, g.header, tc.method, wantHost, "value "+tc.name)
			}
			if !bytes.Equal(g.body, tc.wantBody) {
				t.Errorf("the server got a body of %d bytes, want %d (equal: false)", len(g.body), len(tc.wantBody))
			}
			if g.contentLength != tc.wantCL {
				t.Errorf("the server got ContentLength %d, want %d", g.contentLength, tc.wantCL)
			}
			if chunked := len(g.transferEncoding) == 1 && g.transferEncoding[0] == "chunked"; chunked != tc.wantChunk {
				t.Errorf("the server got Transfer-Encoding %q, want chunked: %v", g.transferEncoding, tc.wantChunk)
			}
		})
	}
}

// TestStaleConnProbed pins the probe of a connection that rested longer than probeAfter: one
// the server closed meanwhile is noticed before use, so that a request that may not be
// retried (a POST) still succeeds, on a new connection; one still open is reused.
func TestStaleConnProbed(t *testing.T) {
	t.Parallel()
	if !isUnix() {
		t.Skip("the socket probe is built for unix only")
	}
	tests := []struct {
		name      string
		tls       bool
		closed    bool // the server closes the idle connection
		wantConns int32
	}{
		{"http, closed", false, true, 2},
		{"https, closed", true, true, 2},
		{"http, open", false, false, 1},
		{"https, open", true, false, 1},
	}
	// All the connections rest together, so that the test waits past probeAfter once.
	type setup struct {
		srv *httptest.Server
		st  *connStats
		tr  *Transport
	}
	setups := make([]setup, len(tests))
	for i, tc := range tests {
		o := serverOpts{tls: tc.tls}
		if tc.closed {
			o.idleTimeout = 50 * time.Millisecond
		}
		srv, st := newServer(t, o, func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			io.WriteString(w, r.Method+":"+string(b))
		})
		tr := newTransport(t, srv, &Transport{})
		get(t, tr, srv.URL, "GET:")
		setups[i] = setup{srv, st, tr}
	}
	lastUse := time.Now()
	for i, tc := range tests {
		if tc.closed {
			waitFor(t, tc.name+": the server to close the idle connection", func() bool { return setups[i].st.closed.Load() == 1 })
		}
	}
	time.Sleep(time.Until(lastUse.Add(probeAfter + 200*time.Millisecond)))
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv, st, tr := setups[i].srv, setups[i].st, setups[i].tr
			if n := idleLen(tr, srv.URL); n != 1 {
				t.Fatalf("%d idle connections before the POST, want 1", n)
			}
			resp, body := do(t, tr, newReq(t, http.MethodPost, srv.URL, strings.NewReader("payload")))
			if resp.StatusCode != http.StatusOK || body != "POST:payload" {
				t.Fatalf("POST: %d %q", resp.StatusCode, body)
			}
			if n := st.opened.Load(); n != tc.wantConns {
				t.Errorf("%d connections opened, want %d", n, tc.wantConns)
			}
		})
	}
}

// TestRetryOnReusedConn pins the retry rule on a reused connection the server closes after
// reading the request: replayable requests go again once, on a new connection, with the
// same body; others, and any request whose answer had begun, fail, sent once.
func TestRetryOnReusedConn(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		req       func(t *testing.T, rawURL string) *http.Request
		partial   string // what the server writes before it closes
		wantRetry bool
	}{
		{"GET", func(t *testing.T, u string) *http.Request { return newReq(t, http.MethodGet, u, nil) }, "", true},
		{"GET, answer begun", func(t *testing.T, u string) *http.Request { return newReq(t, http.MethodGet, u, nil) }, "HTTP/1.1 200 OK\r\nContent-Le", false},
		{"OPTIONS", func(t *testing.T, u string) *http.Request { return newReq(t, http.MethodOptions, u, nil) }, "", true},
		{"POST", func(t *testing.T, u string) *http.Request {
			return newReq(t, http.MethodPost, u, strings.NewReader("payload"))
		}, "", false},
		{"PUT", func(t *testing.T, u string) *http.Request {
			return newReq(t, http.MethodPut, u, strings.NewReader("payload"))
		}, "", false},
		{"DELETE without body", func(t *testing.T, u string) *http.Request { return newReq(t, http.MethodDelete, u, nil) }, "", false},
		{"POST with Idempotency-Key", func(t *testing.T, u string) *http.Request {
			req := newReq(t, http.MethodPost, u, bytes.NewReader([]byte("payload")))
			req.Header.Set("Idempotency-Key", "k1")
			return req
		}, "", true},
		{"POST with X-Idempotency-Key", func(t *testing.T, u string) *http.Request {
			req := newReq(t, http.MethodPost, u, strings.NewReader("payload"))
			req.Header.Set("X-Idempotency-Key", "k2")
			return req
		}, "", true},
		{"POST with Idempotency-Key, no GetBody", func(t *testing.T, u string) *http.Request {
			req := newReq(t, http.MethodPost, u, nil)
			req.Body = io.NopCloser(strings.NewReader("payload"))
			req.ContentLength = 7
			req.Header.Set("Idempotency-Key", "k3")
			return req
		}, "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var rec recorder
			srv := newRawServer(t, func(i int, c net.Conn) {
				serveRequests(c, func(j int, req *http.Request, body []byte) bool {
					rec.add(i, req, body)
					if i == 0 && j == 1 {
						// Read the second request on the first connection, then close.
						io.WriteString(c, tc.partial)
						return false
					}
					_, err := io.WriteString(c, okAnswer)
					return err == nil
				})
			})
			tr := newTransport(t, nil, &Transport{})
			get(t, tr, srv.URL(), "ok") // the connection goes to the pool
			req := tc.req(t, srv.URL())
			resp, err := tr.RoundTrip(req)
			seen := rec.all()
			if !tc.wantRetry {
				if err == nil {
					resp.Body.Close()
					t.Fatalf("got %d, want an error: the request must not be retried", resp.StatusCode)
				}
				if len(seen) != 2 || srv.accepts.Load() != 1 {
					t.Errorf("the server saw %d requests on %d connections, want 2 on 1", len(seen), srv.accepts.Load())
				}
				return
			}
			if err != nil {
				t.Fatalf("want a retry, got %v", err)
			}
			b, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil || resp.StatusCode != http.StatusOK || string(b) != "ok" {
				t.Fatalf("got %d %q %v", resp.StatusCode, b, err)
			}
			seen = rec.all()
			if len(seen) != 3 {
				t.Fatalf("the server saw %d requests, want 3 (warm-up, failed, retried)", len(seen))
			}
			failed, retried := seen[1], seen[2]
			if failed.conn != 0 || retried.conn != 1 || srv.accepts.Load() != 2 {
				t.Errorf("attempts on connections %d and %d of %d, want 0 and 1 of 2", failed.conn, retried.conn, srv.accepts.Load())
			}
			if failed.method != req.Method || retried.method != req.Method {
				t.Errorf("the server saw methods %q and %q, want %q", failed.method, retried.method, req.Method)
			}
			want := ""
			if req.Body != nil && req.Body != http.NoBody {
				want = "payload"
			}
			if failed.body != want || retried.body != want {
				t.Errorf("the server saw bodies %q and %q, want %q twice", failed.body, retried.body, want)
			}
		})
	}
}

// TestRetryNothingSent pins the other retry rule: a request of which nothing could be written
// to a reused connection (the server reset it) goes again on a new connection, whatever its
// method, if its body can be rewound.
func TestRetryNothingSent(t *testing.T) {
	t.Parallel()
	if !isUnix() {
		t.Skip("waits for the reset with the unix socket probe")
	}
	tests := []struct {
		name      string
		getBody   bool
		wantRetry bool
	}{
		{"POST with GetBody", true, true},
		{"POST without GetBody", false, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var rec recorder
			srv := newRawServer(t, func(i int, c net.Conn) {
				serveRequests(c, func(j int, req *http.Request, body []byte) bool {
					rec.add(i, req, body)
					if _, err := io.WriteString(c, okAnswer); err != nil || i > 0 {
						return err == nil
					}
					c.(*net.TCPConn).SetLinger(0) // the close resets the first connection
					return false
				})
			})
			tr := newTransport(t, nil, &Transport{})
			get(t, tr, srv.URL(), "ok")
			pooledAt := time.Now()
			tr.mu.Lock()
			var pooled *conn
			for _, conns := range tr.idle {
				pooled = conns[0]
			}
			tr.mu.Unlock()
			if pooled == nil {
				t.Fatal("the first connection was not pooled")
			}
			waitFor(t, "the reset to reach the pooled connection", func() bool { return !pooled.open() })
			req := newReq(t, http.MethodPost, srv.URL(), strings.NewReader("payload"))
			if !tc.getBody {
				req.GetBody = nil
			}
			resp, err := tr.RoundTrip(req)
			if time.Since(pooledAt) >= probeAfter {
				if err == nil {
					resp.Body.Close()
				}
				t.Skip("the pooled connection rested past probeAfter: it was probed, not tried")
			}
			seen := rec.all()
			if !tc.wantRetry {
				if err == nil {
					resp.Body.Close()
					t.Fatalf("got %d, want an error", resp.StatusCode)
				}
				if len(seen) != 1 {
					t.Errorf("the server saw %d requests, want only the first GET", len(seen))
				}
				return
			}
			if err != nil {
				t.Fatalf("want a retry, got %v", err)
			}
			b, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil || resp.StatusCode != http.StatusOK || string(b) != "ok" {
				t.Fatalf("got %d %q %v", resp.StatusCode, b, err)
			}
			if resp.Request != req {
				t.Error("the answer's Request is not the caller's request")
			}
			seen = rec.all()
			if len(seen) != 2 || seen[1].conn != 1 || seen[1].method != http.MethodPost || seen[1].body != "payload" {
				t.Errorf("the server saw %+v, want the GET on connection 0 and the POST with its body on 1", seen)
			}
		})
	}
}

// TestNoRetryOnFreshConn pins that a request on a new connection the server closes is not
// retried, however replayable.
func TestNoRetryOnFreshConn(t *testing.T) {
	t.Parallel()
	var rec recorder
	srv := newRawServer(t, func(i int, c net.Conn) {
		serveRequests(c, func(j int, req *http.Request, body []byte) bool {
			rec.add(i, req, body)
			return false
		})
	})
	tr := newTransport(t, nil, &Transport{})
	resp, err := tr.RoundTrip(newReq(t, http.MethodGet, srv.URL(), nil))
	if err == nil {
		resp.Body.Close()
		t.Fatalf("got %d, want an error", resp.StatusCode)
	}
	if n, a := len(rec.all()), srv.accepts.Load(); n != 1 || a != 1 {
		t.Errorf("the server saw %d requests on %d connections, want 1 on 1", n, a)
	}
}

// TestRetryDialsNewConn pins that the one retry goes to a new connection, as RoundTrip's
// comment says, even when the pool holds another connection the server has also closed (as
// after a server restart, which closes all of them at once).
func TestRetryDialsNewConn(t *testing.T) {
	t.Parallel()
	var arrived atomic.Int32
	both := make(chan struct{})
	srv := newRawServer(t, func(i int, c net.Conn) {
		serveRequests(c, func(j int, req *http.Request, body []byte) bool {
			if i >= 2 {
				_, err := io.WriteString(c, okAnswer)
				return err == nil
			}
			// The first two connections answer one request each, once both are in flight,
			// with a keep-alive answer, then close.
			if arrived.Add(1) == 2 {
				close(both)
			}
			select {
			case <-both:
			case <-time.After(hangBound):
			}
			io.WriteString(c, okAnswer)
			return false
		})
	})
	tr := newTransport(t, nil, &Transport{})
	getConcurrently(t, tr, srv.URL(), 2, "ok")
	if n := idleLen(tr, srv.URL()); n != 2 {
		t.Fatalf("%d idle connections, want the 2 dead ones", n)
	}
	get(t, tr, srv.URL(), "ok")
	if n := srv.accepts.Load(); n != 3 {
		t.Errorf("%d connections opened, want 3", n)
	}
}

// TestContext pins that the request's context cuts a dial, a wait for the answer and a body
// read short, with the context's error, and that the connection is then not pooled.
func TestContext(t *testing.T) {
	t.Parallel()

	// hangingServer reads a request, writes head (if any), then waits for the client to
	// close; gone is closed then.
	hangingServer := func(t *testing.T, head string) (srv *rawServer, gone chan struct{}) {
		gone = make(chan struct{})
		var once sync.Once
		srv = newRawServer(t, func(i int, c net.Conn) {
			serveRequests(c, func(j int, req *http.Request, body []byte) bool {
				io.WriteString(c, head)
				return false
			})
			io.Copy(io.Discard, c)
			once.Do(func() { close(gone) })
		})
		return srv, gone
	}

	t.Run("deadline before the answer", func(t *testing.T) {
		t.Parallel()
		srv, gone := hangingServer(t, "")
		tr := newTransport(t, nil, &Transport{})
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		req := newReq(t, http.MethodGet, srv.URL(), nil).WithContext(ctx)
		var resp *http.Response
		var err error
		within(t, "RoundTrip to return after its 100 ms deadline", func() { resp, err = tr.RoundTrip(req) })
		if err == nil {
			resp.Body.Close()
			t.Fatalf("got %d from a server that never answers", resp.StatusCode)
		}
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("error %v, want context.DeadlineExceeded", err)
		}
		if n := idleLen(tr, srv.URL()); n != 0 {
			t.Errorf("%d idle connections, want 0", n)
		}
		waitClosed(t, "the client to close the connection", gone)
	})

	t.Run("deadline in the dial", func(t *testing.T) {
		t.Parallel()
		tr := newTransport(t, nil, &Transport{
			DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
				<-ctx.Done()
				return nil, ctx.Err()
			},
		})
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		body := &closeRecorder{Reader: strings.NewReader("x")}
		req := newReq(t, http.MethodPost, "http://127.0.0.1:1/", body).WithContext(ctx)
		var err error
		within(t, "RoundTrip to return after its 100 ms deadline", func() { _, err = tr.RoundTrip(req) })
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("error %v, want context.DeadlineExceeded", err)
		}
		if !body.closed.Load() {
			t.Error("the request body was not closed")
		}
	})

	t.Run("cancel mid-body", func(t *testing.T) {
		t.Parallel()
		srv, gone := hangingServer(t, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n"+strings.Repeat("h", 50))
		tr := newTransport(t, nil, &Transport{})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		resp, err := tr.RoundTrip(newReq(t, http.MethodGet, srv.URL(), nil).WithContext(ctx))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if _, err := io.ReadFull(resp.Body, make([]byte, 50)); err != nil {
			t.Fatalf("reading the half sent: %v", err)
		}
		timer := time.AfterFunc(50*time.Millisecond, cancel) // while the next Read blocks
		defer timer.Stop()
		within(t, "the body read to notice the cancel", func() { _, err = io.ReadAll(resp.Body) })
		if !errors.Is(err, context.Canceled) {
			t.Errorf("reading on: error %v, want context.Canceled", err)
		}
		if n := idleLen(tr, srv.URL()); n != 0 {
			t.Errorf("%d idle connections, want 0", n)
		}
		waitClosed(t, "the client to close the connection", gone)
	})

	t.Run("canceled after the answer", func(t *testing.T) {
		t.Parallel()
		srv := newOKServer(t, nil)
		tr := newTransport(t, nil, &Transport{})
		ctx, cancel := context.WithCancel(context.Background())
		resp, err := tr.RoundTrip(newReq(t, http.MethodGet, srv.URL(), nil).WithContext(ctx))
		if err != nil {
			t.Fatal(err)
		}
		cancel() // the body is most likely buffered already: the read may succeed
		io.ReadAll(resp.Body)
		resp.Body.Close()
		if n := idleLen(tr, srv.URL()); n != 0 {
			t.Errorf("%d idle connections after the request's context was canceled, want 0", n)
		}
		get(t, tr, srv.URL(), "ok")
		if n := srv.accepts.Load(); n != 2 {
			t.Errorf("%d connections opened, want 2", n)
		}
	})

	t.Run("already canceled", func(t *testing.T) {
		t.Parallel()
		srv := newOKServer(t, nil)
		var dials atomic.Int32
		var d net.Dialer
		tr := newTransport(t, nil, &Transport{
			DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
				dials.Add(1)
				return d.DialContext(ctx, network, addr)
			},
		})
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		body := &closeRecorder{Reader: strings.NewReader("x")}
		_, err := tr.RoundTrip(newReq(t, http.MethodPost, srv.URL(), body).WithContext(ctx))
		if !errors.Is(err, context.Canceled) {
			t.Errorf("error %v, want context.Canceled", err)
		}
		if n := dials.Load(); n != 0 {
			t.Errorf("%d dials, want 0", n)
		}
		if !body.closed.Load() {
			t.Error("the request body was not closed")
		}
		// Accepts come in the order of connections: had the canceled request connected, this
		// request's connection would be the second accepted.
		get(t, tr, srv.URL(), "ok")
		if n := srv.accepts.Load(); n != 1 {
			t.Errorf("the server accepted %d connections, want 1 (the later request's)", n)
		}
	})
}

// TestTLS pins https: the answer carries the TLS state, HTTP/1.1 was negotiated, and the
// connection is reused.
func TestTLS(t *testing.T) {
	t.Parallel()
	srv, st := newServer(t, serverOpts{tls: true}, func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "%s tls=%v", r.Proto, r.TLS != nil)
	})
	tr := newTransport(t, srv, &Transport{TLSHandshakeTimeout: hangBound})
	for i := range 3 {
		resp, body := do(t, tr, newReq(t, http.MethodGet, srv.URL, nil))
		if resp.StatusCode != http.StatusOK || body != "HTTP/1.1 tls=true" {
			t.Fatalf("request %d: %d %q", i, resp.StatusCode, body)
		}
		if resp.TLS == nil {
			t.Fatalf("request %d: no TLS state in the answer", i)
		}
		if !resp.TLS.HandshakeComplete || resp.TLS.NegotiatedProtocol != "http/1.1" {
			t.Errorf("request %d: handshake complete %v, protocol %q; want true, http/1.1", i, resp.TLS.HandshakeComplete, resp.TLS.NegotiatedProtocol)
		}
	}
	if n := st.opened.Load(); n != 1 {
		t.Errorf("3 requests opened %d connections, want 1", n)
	}
}

// TestTLSUntrusted pins that the server's certificate is verified: without the test CA the
// request fails.
func TestTLSUntrusted(t *testing.T) {
	t.Parallel()
	srv, _ := newServer(t, serverOpts{tls: true}, func(w http.ResponseWriter, r *http.Request) {})
	tr := newTransport(t, nil, &Transport{}) // no TLSClientConfig: the system roots
	resp, err := tr.RoundTrip(newReq(t, http.MethodGet, srv.URL, nil))
	if err == nil {
		resp.Body.Close()
		t.Fatal("a server with an untrusted certificate was accepted")
	}
}

// TestPoolBound pins MaxIdleConnsPerHost: of the connections freed together, only that many
// stay pooled, the others are closed, and the pooled ones are reused.
func TestPoolBound(t *testing.T) {
	t.Parallel()
	const concurrent = 5
	for _, tc := range []struct{ max, want int }{{0, 2}, {2, 2}, {3, 3}, {5, 5}} {
		t.Run(fmt.Sprintf("max %d", tc.max), func(t *testing.T) {
			t.Parallel()
			srv, st := newServer(t, serverOpts{}, barrier(concurrent, "ok"))
			tr := newTransport(t, srv, &Transport{MaxIdleConnsPerHost: tc.max})
			getConcurrently(t, tr, srv.URL, concurrent, "ok")
			if n := st.opened.Load(); n != concurrent {
				t.Fatalf("%d connections opened, want %d", n, concurrent)
			}
			if n := idleLen(tr, srv.URL); n != tc.want {
				t.Errorf("%d idle connections, want %d", n, tc.want)
			}
			evicted := int32(concurrent - tc.want)
			waitFor(t, "the server to see the evicted connections closed", func() bool { return st.closed.Load() >= evicted })
			getConcurrently(t, tr, srv.URL, tc.want, "ok")
			if n := st.opened.Load(); n != concurrent {
				t.Errorf("%d concurrent requests on %d pooled connections opened new ones: %d in all", tc.want, tc.want, n)
			}
			if n := st.closed.Load(); n != evicted {
				t.Errorf("the server saw %d connections closed, want %d", n, evicted)
			}
		})
	}
}

// TestIdleConnTimeout pins the janitor: a connection idle for IdleConnTimeout is closed and
// leaves the pool, not before its time, and the janitor works again after emptying the pool.
func TestIdleConnTimeout(t *testing.T) {
	t.Parallel()
	const timeout = 50 * time.Millisecond
	srv, st := newServer(t, serverOpts{}, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	tr := newTransport(t, srv, &Transport{IdleConnTimeout: timeout})
	for round := int32(1); round <= 2; round++ {
		start := time.Now()
		get(t, tr, srv.URL, "ok")
		if n := idleLen(tr, srv.URL); n != 1 && time.Since(start) < timeout {
			t.Fatalf("round %d: %d idle connections right after the request, want 1", round, n)
		}
		waitFor(t, "the janitor to empty the pool", func() bool { return idleTotal(tr) == 0 })
		waitFor(t, "the server to see the connection closed", func() bool { return st.closed.Load() == round })
		if d := time.Unix(0, st.closedAt.Load()).Sub(start); d < timeout {
			t.Errorf("round %d: the connection was closed %v after the request began, before IdleConnTimeout %v", round, d, timeout)
		}
		if n := st.opened.Load(); n != round {
			t.Fatalf("round %d: %d connections opened, want %d", round, n, round)
		}
	}
	tr.mu.Lock()
	janitor := tr.janitor
	tr.mu.Unlock()
	if janitor != nil {
		t.Error("the janitor is still armed with an empty pool")
	}
}

// TestIdleConnTimeoutStaggered pins that the janitor comes back for connections that were not
// yet due when it last ran.
func TestIdleConnTimeoutStaggered(t *testing.T) {
	t.Parallel()
	const timeout = 100 * time.Millisecond
	ok := func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }
	srvA, stA := newServer(t, serverOpts{}, ok)
	srvB, stB := newServer(t, serverOpts{}, ok)
	tr := newTransport(t, srvA, &Transport{IdleConnTimeout: timeout})
	get(t, tr, srvA.URL, "ok")
	time.Sleep(timeout / 2) // B's connection is not due when A's is
	get(t, tr, srvB.URL, "ok")
	waitFor(t, "the janitor to empty the pool", func() bool { return idleTotal(tr) == 0 })
	waitFor(t, "both servers to see their connection closed", func() bool { return stA.closed.Load() == 1 && stB.closed.Load() == 1 })
}

// recordingRT is a Fallback that records what it carries and answers 299 itself.
type recordingRT struct {
	mu        sync.Mutex
	reqs      []*http.Request
	closeIdle atomic.Int32
}

func (r *recordingRT) RoundTrip(req *http.Request) (*http.Response, error) {
	r.mu.Lock()
	r.reqs = append(r.reqs, req)
	r.mu.Unlock()
	return &http.Response{StatusCode: 299, Body: http.NoBody, Request: req}, nil
}

func (r *recordingRT) CloseIdleConnections() { r.closeIdle.Add(1) }

func (r *recordingRT) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.reqs)
}

// TestCloseIdleConnections pins that the pool is emptied, its connections closed, Fallback's
// closed too, and that the transport works on afterwards.
func TestCloseIdleConnections(t *testing.T) {
	t.Parallel()
	srv, st := newServer(t, serverOpts{}, barrier(2, "ok"))
	fb := new(recordingRT)
	tr := newTransport(t, srv, &Transport{Fallback: fb})
	getConcurrently(t, tr, srv.URL, 2, "ok")
	if n := idleLen(tr, srv.URL); n != 2 {
		t.Fatalf("%d idle connections, want 2", n)
	}
	// Held here, the connections cannot be closed by their finalizers, only by the transport.
	tr.mu.Lock()
	var pooled []*conn
	for _, conns := range tr.idle {
		pooled = append(pooled, conns...)
	}
	tr.mu.Unlock()
	defer runtime.KeepAlive(pooled)
	tr.CloseIdleConnections()
	if n := idleTotal(tr); n != 0 {
		t.Errorf("%d idle connections after CloseIdleConnections", n)
	}
	if n := fb.closeIdle.Load(); n != 1 {
		t.Errorf("Fallback's CloseIdleConnections called %d times, want 1", n)
	}
	waitFor(t, "the server to see both connections closed", func() bool { return st.closed.Load() == 2 })
	get(t, tr, srv.URL, "ok")
	if n, idle := st.opened.Load(), idleLen(tr, srv.URL); n != 3 || idle != 1 {
		t.Errorf("after CloseIdleConnections: %d connections opened, %d idle; want 3, 1", n, idle)
	}
}

// TestFallback pins which requests go to Fallback and not to the network, and that the
// requests this transport refuses fail with their body closed.
func TestFallback(t *testing.T) {
	t.Parallel()
	srv, _ := newServer(t, serverOpts{}, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	proxyURL, _ := url.Parse("http://proxy.invalid:3128")
	errProxy := errors.New("no proxy for you")
	tests := []struct {
		name         string
		url          string // "" for a nil URL
		proxy        func(*http.Request) (*url.URL, error)
		fallback     bool
		wantFallback bool
		wantErr      error // when an error is wanted with no more precise one: errAny
		wantDial     bool
	}{
		{"proxy", srv.URL, http.ProxyURL(proxyURL), true, true, nil, false},
		{"ftp", "ftp://files.invalid/x", nil, true, true, nil, false},
		{"proxy, no Fallback", srv.URL, http.ProxyURL(proxyURL), false, false, errAny, false},
		{"ftp, no Fallback", "ftp://files.invalid/x", nil, false, false, errAny, false},
		{"proxy error", srv.URL, func(*http.Request) (*url.URL, error) { return nil, errProxy }, true, false, errProxy, false},
		{"no proxy", srv.URL, func(*http.Request) (*url.URL, error) { return nil, nil }, true, false, nil, true},
		{"nil URL", "", nil, true, false, errAny, false},
		{"empty host", "http:///path", nil, true, false, errAny, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fb := new(recordingRT)
			var dials atomic.Int32
			var d net.Dialer
			tr := newTransport(t, srv, &Transport{
				Proxy: tc.proxy,
				DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
					dials.Add(1)
					return d.DialContext(ctx, network, addr)
				},
			})
			if tc.fallback {
				tr.Fallback = fb
			}
			req := newReq(t, http.MethodPost, "http://placeholder.invalid/", nil)
			body := &closeRecorder{Reader: strings.NewReader("data")}
			req.Body, req.ContentLength = body, 4
			req.URL = nil
			if tc.url != "" {
				u, err := url.Parse(tc.url)
				if err != nil {
					t.Fatal(err)
				}
				req.URL = u
			}
			resp, err := tr.RoundTrip(req)
			if err == nil {
				defer resp.Body.Close()
			}
			switch {
			case tc.wantErr != nil:
				if err == nil {
					t.Fatalf("got %d, want an error", resp.StatusCode)
				}
				if tc.wantErr != errAny && !errors.Is(err, tc.wantErr) {
					t.Errorf("error %v, want %v", err, tc.wantErr)
				}
				if !body.closed.Load() {
					t.Error("the refused request's body was not closed")
				}
			case err != nil:
				t.Fatalf("error %v", err)
			case tc.wantFallback:
				if resp.StatusCode != 299 || fb.count() != 1 || resp.Request != req {
					t.Errorf("status %d, Fallback carried %d requests; want Fallback's 299 for this request", resp.StatusCode, fb.count())
				}
				if body.closed.Load() {
					t.Error("the body was closed before Fallback got the request")
				}
			default:
				b, _ := io.ReadAll(resp.Body)
				if resp.StatusCode != http.StatusOK || string(b) != "ok" {
					t.Errorf("got %d %q, want the server's 200", resp.StatusCode, b)
				}
			}
			if !tc.wantFallback && fb.count() != 0 {
				t.Errorf("Fallback carried %d requests, want 0", fb.count())
			}
			if got := dials.Load() > 0; got != tc.wantDial {
				t.Errorf("%d dials, want dialing: %v", dials.Load(), tc.wantDial)
			}
		})
	}
}

// errAny stands for "an error" in TestFallback's table.
var errAny = errors.New("any error")

// TestConcurrentRequests pins correctness under concurrency: every answer reaches its own
// caller, and connections are shared, not multiplied.
func TestConcurrentRequests(t *testing.T) {
	t.Parallel()
	const goroutines, requests = 32, 50
	srv, st := newServer(t, serverOpts{}, func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "answer to "+r.URL.RawQuery)
	})
	tr := newTransport(t, srv, &Transport{MaxIdleConnsPerHost: goroutines})
	errs := make(chan error, goroutines)
	for g := range goroutines {
		go func() {
			for i := range requests {
				query := fmt.Sprintf("g=%d&i=%d", g, i)
				req, err := http.NewRequest(http.MethodGet, srv.URL+"/?"+query, nil)
				if err != nil {
					errs <- err
					return
				}
				resp, err := tr.RoundTrip(req)
				if err != nil {
					errs <- fmt.Errorf("%s: %w", query, err)
					return
				}
				b, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil || resp.StatusCode != http.StatusOK || string(b) != "answer to "+query {
					errs <- fmt.Errorf("%s: got %d %q %v", query, resp.StatusCode, b, err)
					return
				}
			}
			errs <- nil
		}()
	}
	for range goroutines {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	if n := st.opened.Load(); n > goroutines+4 {
		t.Errorf("%d goroutines opened %d connections", goroutines, n)
	}
	if n := idleLen(tr, srv.URL); n < 1 || n > goroutines {
		t.Errorf("%d idle connections after all requests, want 1 to %d", n, goroutines)
	}
}

// TestBodyAfterEnd pins reads of a body past its end: after EOF, io.EOF again; after Close
// before EOF, an error.
func TestBodyAfterEnd(t *testing.T) {
	t.Parallel()
	srv, _ := newServer(t, serverOpts{}, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "hello") })
	tr := newTransport(t, srv, &Transport{})

	t.Run("after EOF", func(t *testing.T) {
		resp, err := tr.RoundTrip(newReq(t, http.MethodGet, srv.URL, nil))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if b, err := io.ReadAll(resp.Body); err != nil || string(b) != "hello" {
			t.Fatalf("ReadAll: %q %v", b, err)
		}
		for range 2 {
			if n, err := resp.Body.Read(make([]byte, 8)); n != 0 || err != io.EOF {
				t.Errorf("Read after EOF: %d %v, want 0 io.EOF", n, err)
			}
		}
	})

	t.Run("after Close", func(t *testing.T) {
		resp, err := tr.RoundTrip(newReq(t, http.MethodGet, srv.URL, nil))
		if err != nil {
			t.Fatal(err)
		}
		if n, err := resp.Body.Read(make([]byte, 1)); n != 1 || err != nil {
			t.Fatalf("first Read: %d %v", n, err)
		}
		for range 2 {
			if err := resp.Body.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
		}
		if n, err := resp.Body.Read(make([]byte, 8)); n != 0 || err == nil || err == io.EOF {
			t.Errorf("Read after Close: %d %v, want 0 and an error other than io.EOF", n, err)
		}
	})
}

// zeros is an endless reader of zero bytes.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// TestEarlyAnswerToUpload pins that an answer the server sends before it has read the whole
// request body (a 413, a 401) reaches the caller, as with net/http's Transport, rather than
// the error of the write it cut short, or a write blocked forever.
func TestEarlyAnswerToUpload(t *testing.T) {
	t.Parallel()
	const size = 256 << 20 // more than the server drains and the socket buffers hold
	t.Run("server closes", func(t *testing.T) {
		t.Parallel()
		srv, _ := newServer(t, serverOpts{}, func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "too large", http.StatusRequestEntityTooLarge)
		})
		tr := newTransport(t, srv, &Transport{})
		req := newReq(t, http.MethodPost, srv.URL, io.NopCloser(io.LimitReader(zeros{}, size)))
		req.ContentLength = size
		var resp *http.Response
		var err error
		within(t, "RoundTrip", func() { resp, err = tr.RoundTrip(req) })
		if err != nil {
			t.Fatalf("got %v, want the server's 413", err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestEntityTooLarge {
			t.Errorf("got %d, want 413", resp.StatusCode)
		}
	})
	t.Run("server stops reading", func(t *testing.T) {
		t.Parallel()
		stop := make(chan struct{})
		srv := newRawServer(t, func(i int, c net.Conn) {
			if _, err := http.ReadRequest(bufio.NewReader(c)); err != nil {
				return
			}
			io.WriteString(c, "HTTP/1.1 413 Request Entity Too Large\r\nConnection: close\r\nContent-Length: 3\r\n\r\nbig")
			<-stop
		})
		t.Cleanup(func() { close(stop) })
		tr := newTransport(t, nil, &Transport{})
		req := newReq(t, http.MethodPost, srv.URL(), io.NopCloser(io.LimitReader(zeros{}, size)))
		req.ContentLength = size
		var resp *http.Response
		var err error
		within(t, "RoundTrip", func() { resp, err = tr.RoundTrip(req) })
		if err != nil {
			t.Fatalf("got %v, want the server's 413", err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestEntityTooLarge {
			t.Errorf("got %d, want 413", resp.StatusCode)
		}
	})
}

// TestInvalidMethod pins that a method that is not an HTTP token is refused before anything
// is written, as net/http's Transport refuses it: Request.Write writes the method verbatim.
func TestInvalidMethod(t *testing.T) {
	t.Parallel()
	var rec recorder
	srv := newOKServer(t, &rec)
	tr := newTransport(t, nil, &Transport{})
	req := newReq(t, http.MethodGet, srv.URL(), nil)
	req.Method = "GET /smuggled HTTP/1.1\r\nHost: victim\r\n\r\nGET"
	resp, err := tr.RoundTrip(req)
	if err == nil {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		t.Errorf("an invalid method was sent; the server saw %d requests", len(rec.all()))
	}
}

// TestHostPort pins the pool key's address: the scheme's default port when none is named.
func TestHostPort(t *testing.T) {
	t.Parallel()
	tests := []struct{ url, want string }{
		{"http://example.com/x", "example.com:80"},
		{"https://example.com/x", "example.com:443"},
		{"http://example.com:8080/x", "example.com:8080"},
		{"https://[::1]/", "[::1]:443"},
		{"http://[::1]:81/", "[::1]:81"},
		{"http://127.0.0.1:9/", "127.0.0.1:9"},
	}
	for _, tc := range tests {
		u, err := url.Parse(tc.url)
		if err != nil {
			t.Fatal(err)
		}
		if got := hostPort(u); got != tc.want {
			t.Errorf("hostPort(%s) = %q, want %q", tc.url, got, tc.want)
		}
	}
}

// BenchmarkRoundTrip compares this Transport with a stock http.Transport on small GETs to the
// same server.
func BenchmarkRoundTrip(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "hello, world")
	}))
	defer srv.Close()
	stock := http.DefaultTransport.(*http.Transport).Clone()
	stock.MaxIdleConnsPerHost = 64
	for _, bc := range []struct {
		name string
		rt   interface {
			http.RoundTripper
			CloseIdleConnections()
		}
	}{
		{"h1", &Transport{MaxIdleConnsPerHost: 64}},
		{"net-http", stock},
	} {
		b.Run(bc.name, func(b *testing.B) {
			defer bc.rt.CloseIdleConnections()
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					req, err := http.NewRequest(http.MethodGet, srv.URL, nil)
					if err != nil {
						b.Error(err)
						return
					}
					resp, err := bc.rt.RoundTrip(req)
					if err != nil {
						b.Error(err)
						return
					}
					_, err = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if err != nil || resp.StatusCode != http.StatusOK {
						b.Errorf("%d %v", resp.StatusCode, err)
						return
					}
				}
			})
		})
	}
}

// TestAnswerHeadBounded pins the bounds on an answer's head: a header past maxHeadBytes and
// more than maxInterim interim answers are errors, not unbounded memory or an endless loop.
func TestAnswerHeadBounded(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		head func(w io.Writer)
	}{
		{"endless header", func(w io.Writer) {
			io.WriteString(w, "HTTP/1.1 200 OK\r\n")
			line := "X-Filler: " + strings.Repeat("a", 1000) + "\r\n"
			for written := 0; written <= maxHeadBytes; written += len(line) {
				if _, err := io.WriteString(w, line); err != nil {
					return
				}
			}
		}},
		{"too many interim answers", func(w io.Writer) {
			for range maxInterim + 1 {
				io.WriteString(w, "HTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\n")
			}
			io.WriteString(w, okAnswer)
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := newRawServer(t, func(i int, c net.Conn) {
				if _, _, err := readRequest(bufio.NewReader(c)); err != nil {
					return
				}
				bw := bufio.NewWriter(c)
				tc.head(bw)
				bw.Flush()
			})
			tr := newTransport(t, nil, &Transport{})
			var resp *http.Response
			var err error
			within(t, "RoundTrip", func() { resp, err = tr.RoundTrip(newReq(t, http.MethodGet, srv.URL(), nil)) })
			if err == nil {
				resp.Body.Close()
				t.Fatalf("got %d, want an error", resp.StatusCode)
			}
			if idleTotal(tr) != 0 {
				t.Error("the connection was pooled")
			}
		})
	}
}

// failingBody is a request body whose reads fail.
type failingBody struct{}

func (failingBody) Read([]byte) (int, error) { return 0, errors.New("the body's source failed") }
func (failingBody) Close() error             { return nil }

// TestRequestBodyErrorNotRetried pins that a request whose own body fails is not taken for a
// connection the server closed: the body's error comes back at once (the server is not left
// waiting for the rest, whether the body is written before the answer is read or beside it),
// and nothing is re-sent.
func TestRequestBodyErrorNotRetried(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		length int64
	}{
		{"sized, written first", 7},
		{"unknown length, written beside the read", 0},
		{"large, written beside the read", syncBodyMax + 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var rec recorder
			srv := newOKServer(t, &rec)
			tr := newTransport(t, nil, &Transport{})
			get(t, tr, srv.URL(), "ok") // pools a connection, so that the POST goes on a reused one
			var rewound atomic.Int32
			req := newReq(t, http.MethodPost, srv.URL(), nil)
			req.Body, req.ContentLength = failingBody{}, tc.length
			req.GetBody = func() (io.ReadCloser, error) {
				rewound.Add(1)
				return io.NopCloser(strings.NewReader("payload")), nil
			}
			var resp *http.Response
			var err error
			within(t, "RoundTrip", func() { resp, err = tr.RoundTrip(req) })
			if err == nil {
				resp.Body.Close()
				t.Fatalf("got %d, want the body's error", resp.StatusCode)
			}
			if !strings.Contains(err.Error(), "the body's source failed") {
				t.Errorf("got %v, want the body's error", err)
			}
			if n := rewound.Load(); n != 0 {
				t.Errorf("GetBody called %d times: the request was retried", n)
			}
			if n := len(rec.all()); n != 1 {
				t.Errorf("the server saw %d requests, want only the GET", n)
			}
		})
	}
}

// TestBodyReadErrorRepeats pins that once a body read failed, later reads fail the same way
// (not with "read on closed body", not with io.EOF).
func TestBodyReadErrorRepeats(t *testing.T) {
	t.Parallel()
	srv := newRawServer(t, func(i int, c net.Conn) {
		if _, _, err := readRequest(bufio.NewReader(c)); err != nil {
			return
		}
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhalf")
	})
	tr := newTransport(t, nil, &Transport{})
	resp, err := tr.RoundTrip(newReq(t, http.MethodGet, srv.URL(), nil))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var first error
	within(t, "ReadAll", func() { _, first = io.ReadAll(resp.Body) })
	if !errors.Is(first, io.ErrUnexpectedEOF) {
		t.Fatalf("ReadAll: %v, want io.ErrUnexpectedEOF", first)
	}
	if _, err := resp.Body.Read(make([]byte, 8)); err != first {
		t.Errorf("Read after the failure: %v, want %v again", err, first)
	}
	if idleTotal(tr) != 0 {
		t.Error("the connection was pooled")
	}
}
