// Package h1 is a lean HTTP/1.1 client transport. Each round trip runs on the caller's
// goroutine over a pooled keep-alive connection, and the wire format is net/http's own:
// Request.Write sends the request and http.ReadResponse reads the answer.
//
// net/http's Transport runs two goroutines per connection and hands every request and answer
// between them over channels; a proxy that makes one upstream call per request pays those
// hand-offs on every call. This transport pays none, and keeps the parts of net/http's
// behaviour a production client relies on: connections are reused only after an answer was
// read to its end, a pooled connection the server has closed is noticed before it is used, a
// request is retried on a fresh connection only where net/http would retry it, and the
// request's context cancels a dial, a write or a read at once.
//
// It speaks HTTP/1.1 only (offering "http/1.1" in TLS), and does not follow redirects, inflate
// compressed answers or speak to proxies: a request an HTTP proxy should carry, or with a
// scheme other than http and https, goes to Fallback.
package h1

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"

	"golang.org/x/net/http/httpguts"
)

// Transport is an http.RoundTripper for HTTP/1.1 over TCP and TLS. Its zero value is usable;
// set its fields before the first request and do not change them afterwards. It is safe for
// concurrent use.
type Transport struct {
	// DialContext opens TCP connections. Nil: a net.Dialer with a 30 s timeout and 30 s
	// keep-alive probes.
	DialContext func(ctx context.Context, network, addr string) (net.Conn, error)

	// TLSClientConfig configures TLS for https. Nil: the defaults of crypto/tls. Its
	// ServerName is set from each request's host, and its NextProtos to "http/1.1".
	TLSClientConfig *tls.Config

	// TLSHandshakeTimeout bounds a TLS handshake. Zero: no bound but the request's context.
	TLSHandshakeTimeout time.Duration

	// MaxIdleConnsPerHost bounds the idle connections kept per host. Zero: 2, as net/http.
	MaxIdleConnsPerHost int

	// IdleConnTimeout closes a connection idle for that long. Zero: 90 s.
	IdleConnTimeout time.Duration

	// Proxy names the HTTP proxy for a request, as http.Transport's field does; a request
	// with a proxy goes to Fallback. Nil: no proxy.
	Proxy func(*http.Request) (*url.URL, error)

	// Fallback carries the requests this transport does not: those through a proxy, and
	// schemes other than http and https. Nil: such requests fail.
	Fallback http.RoundTripper

	mu      sync.Mutex
	idle    map[connKey][]*conn // per host, most recently used last
	janitor *time.Timer         // closes connections past IdleConnTimeout; nil when idle is empty
	sweeps  uint64              // the janitor's generation: a sweep of an older one does nothing
}

// connKey is where a connection goes: the scheme and host:port.
type connKey struct {
	https bool
	addr  string
}

// probeAfter is how long a connection rests in the pool before its next use first checks
// that the server has not closed it. Servers close idle connections after seconds, not
// microseconds: a connection back in use at once under load is not checked.
const probeAfter = time.Second

// RoundTrip sends req and returns the server's answer. Like http.Transport's, it returns an
// error only when no answer was read; the caller must close the answer's body, and the
// connection is reused once the body has been read to its end.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	u := req.URL
	if u == nil {
		closeBody(req)
		return nil, errors.New("h1: nil Request.URL")
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return t.fallback(req, "scheme "+u.Scheme)
	}
	if t.Proxy != nil {
		p, err := t.Proxy(req)
		if err != nil {
			closeBody(req)
			return nil, fmt.Errorf("h1: choosing a proxy: %w", err)
		}
		if p != nil {
			return t.fallback(req, "a proxy")
		}
	}
	if u.Host == "" {
		closeBody(req)
		return nil, errors.New("h1: no host in the request URL")
	}
	if req.Method != "" && !httpguts.ValidHeaderFieldName(req.Method) {
		// Request.Write writes the method as it is: CR LF in it would split the request.
		closeBody(req)
		return nil, fmt.Errorf("h1: invalid method %q", req.Method)
	}
	ctx := req.Context()
	key := connKey{https: u.Scheme == "https", addr: hostPort(u)}
	sent := req
	for retried := false; ; retried = true {
		if err := ctx.Err(); err != nil {
			closeBody(sent)
			return nil, context.Cause(ctx)
		}
		var c *conn
		var reused bool
		var err error
		if retried {
			c, err = t.dial(ctx, key, u.Hostname()) // other pooled connections may be as stale
		} else {
			c, reused, err = t.conn(ctx, key, u)
		}
		if err != nil {
			closeBody(sent)
			if ctx.Err() != nil {
				return nil, context.Cause(ctx)
			}
			return nil, err
		}
		resp, err := c.roundTrip(ctx, sent)
		if err == nil {
			resp.Request = req
			return resp, nil
		}
		if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		var f *failure
		if !errors.As(err, &f) || retried || !reused || !f.retryable(sent) {
			return nil, err
		}
		// The server closed a kept-alive connection under us, where net/http would also try
		// again: once more on a new connection, with the body rewound.
		if sent, err = rewind(sent); err != nil {
			return nil, err
		}
	}
}

// fallback hands req to Fallback, or fails naming what this transport does not do.
func (t *Transport) fallback(req *http.Request, what string) (*http.Response, error) {
	if t.Fallback == nil {
		closeBody(req)
		return nil, fmt.Errorf("h1: %s needs a Fallback transport", what)
	}
	return t.Fallback.RoundTrip(req)
}

// CloseIdleConnections closes the pooled connections (and Fallback's).
func (t *Transport) CloseIdleConnections() {
	t.mu.Lock()
	idle := t.idle
	t.idle = nil
	if t.janitor != nil {
		t.janitor.Stop()
		t.janitor = nil
		t.sweeps++
	}
	t.mu.Unlock()
	for _, conns := range idle {
		for _, c := range conns {
			c.close()
		}
	}
	if f, ok := t.Fallback.(interface{ CloseIdleConnections() }); ok {
		f.CloseIdleConnections()
	}
}

// conn returns a pooled connection to key that is still open, else a new one.
func (t *Transport) conn(ctx context.Context, key connKey, u *url.URL) (c *conn, reused bool, err error) {
	for {
		c = t.take(key)
		if c == nil {
			break
		}
		if time.Since(c.idleSince) < probeAfter || c.open() {
			return c, true, nil
		}
		c.close()
	}
	c, err = t.dial(ctx, key, u.Hostname())
	return c, false, err
}

// take removes the most recently used idle connection to key from the pool.
func (t *Transport) take(key connKey) *conn {
	t.mu.Lock()
	defer t.mu.Unlock()
	conns := t.idle[key]
	n := len(conns)
	if n == 0 {
		return nil
	}
	c := conns[n-1]
	conns[n-1] = nil
	t.idle[key] = conns[:n-1]
	return c
}

// put returns c to the pool, closing the least recently used connection past the bound.
func (t *Transport) put(c *conn) {
	c.idleSince = time.Now()
	max := t.MaxIdleConnsPerHost
	if max <= 0 {
		max = 2
	}
	var evicted *conn
	t.mu.Lock()
	if t.idle == nil {
		t.idle = make(map[connKey][]*conn)
	}
	conns := t.idle[c.key]
	if len(conns) >= max {
		evicted = conns[0]
		conns = append(conns[:0], conns[1:]...)
	}
	t.idle[c.key] = append(conns, c)
	if t.janitor == nil {
		t.arm(t.idleTimeout())
	}
	t.mu.Unlock()
	if evicted != nil {
		evicted.close()
	}
}

func (t *Transport) idleTimeout() time.Duration {
	if t.IdleConnTimeout > 0 {
		return t.IdleConnTimeout
	}
	return 90 * time.Second
}

// arm starts a janitor that sweeps after d. The caller holds t.mu.
func (t *Transport) arm(d time.Duration) {
	t.sweeps++
	gen := t.sweeps
	t.janitor = time.AfterFunc(d, func() { t.sweep(gen) })
}

// sweep closes the connections idle for IdleConnTimeout, and comes back while any are left.
func (t *Transport) sweep(gen uint64) {
	timeout := t.idleTimeout()
	cutoff := time.Now().Add(-timeout)
	var expired []*conn
	t.mu.Lock()
	if gen != t.sweeps {
		t.mu.Unlock() // stopped by CloseIdleConnections while it waited for the lock
		return
	}
	oldest := time.Now()
	for key, conns := range t.idle {
		keep := conns[:0]
		for _, c := range conns {
			if c.idleSince.Before(cutoff) {
				expired = append(expired, c)
				continue
			}
			keep = append(keep, c)
			if c.idleSince.Before(oldest) {
				oldest = c.idleSince
			}
		}
		clear(conns[len(keep):])
		if len(keep) == 0 {
			delete(t.idle, key)
		} else {
			t.idle[key] = keep
		}
	}
	t.janitor = nil
	if len(t.idle) > 0 {
		t.arm(time.Until(oldest.Add(timeout)))
	}
	t.mu.Unlock()
	for _, c := range expired {
		c.close()
	}
}

// dial opens a connection to key, with TLS for https.
func (t *Transport) dial(ctx context.Context, key connKey, host string) (*conn, error) {
	dial := t.DialContext
	if dial == nil {
		dial = defaultDialer.DialContext
	}
	raw, err := dial(ctx, "tcp", key.addr)
	if err != nil {
		return nil, err
	}
	c := &conn{t: t, key: key, raw: raw, nc: raw}
	if key.https {
		tc, err := t.handshake(ctx, raw, host)
		if err != nil {
			raw.Close()
			return nil, err
		}
		state := tc.ConnectionState()
		c.nc, c.tls = tc, &state
	}
	c.limit = math.MaxInt64
	c.br = bufio.NewReaderSize(limitedReader{c}, 4<<10)
	c.bw = bufio.NewWriterSize(countingWriter{c}, 4<<10)
	return c, nil
}

var defaultDialer = &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}

func (t *Transport) handshake(ctx context.Context, raw net.Conn, host string) (*tls.Conn, error) {
	var cfg *tls.Config
	if t.TLSClientConfig != nil {
		cfg = t.TLSClientConfig.Clone()
	} else {
		cfg = &tls.Config{}
	}
	if cfg.ServerName == "" {
		cfg.ServerName = host
	}
	cfg.NextProtos = []string{"http/1.1"}
	if t.TLSHandshakeTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, t.TLSHandshakeTimeout)
		defer cancel()
	}
	tc := tls.Client(raw, cfg)
	if err := tc.HandshakeContext(ctx); err != nil {
		return nil, err
	}
	return tc, nil
}

// conn is one connection and its buffers.
type conn struct {
	t         *Transport
	key       connKey
	raw       net.Conn // the TCP connection
	nc        net.Conn // raw, or the TLS connection over it
	tls       *tls.ConnectionState
	br        *bufio.Reader
	bw        *bufio.Writer
	written   int64 // bytes handed to nc
	limit     int64 // bytes nc may still give: bounds an answer's head
	idleSince time.Time
}

// limitedReader reads from the connection, at most c.limit bytes.
type limitedReader struct{ c *conn }

func (r limitedReader) Read(p []byte) (int, error) {
	if r.c.limit <= 0 {
		return 0, errHeadTooLarge
	}
	if int64(len(p)) > r.c.limit {
		p = p[:r.c.limit]
	}
	n, err := r.c.nc.Read(p)
	r.c.limit -= int64(n)
	return n, err
}

// maxHeadBytes bounds the status line and header of an answer, interim answers included
// (net/http's default for MaxResponseHeaderBytes).
const maxHeadBytes = 10 << 20

// maxInterim bounds the interim (1xx) answers skipped before the answer, as net/http does.
const maxInterim = 5

var errHeadTooLarge = fmt.Errorf("h1: the answer's header is larger than %d bytes", maxHeadBytes)

// countingWriter writes to the connection, counting what it accepted.
type countingWriter struct{ c *conn }

func (w countingWriter) Write(p []byte) (int, error) {
	n, err := w.c.nc.Write(p)
	w.c.written += int64(n)
	return n, err
}

// aLongTimeAgo is a deadline that makes a blocked read or write return at once.
var aLongTimeAgo = time.Unix(1, 0)

// interrupt makes the connection's reads and writes fail at once.
func (c *conn) interrupt() { _ = c.nc.SetDeadline(aLongTimeAgo) }

func (c *conn) close() { _ = c.nc.Close() }

// failure is a round trip that got no answer, with what the retry rule needs to know.
type failure struct {
	err          error
	nothingSent  bool // no byte of the request reached the connection
	nothingHeard bool // the request was sent, and no byte of an answer came back
}

func (f *failure) Error() string { return f.err.Error() }
func (f *failure) Unwrap() error { return f.err }

// retryable is net/http's rule for a kept-alive connection: a request of which nothing was
// sent may go again if its body can be rewound; one that was sent, only if it is replayable
// (idempotent, or carrying an idempotency key) and no answer had begun.
func (f *failure) retryable(req *http.Request) bool {
	if f.nothingSent {
		return req.Body == nil || req.Body == http.NoBody || req.GetBody != nil
	}
	return f.nothingHeard && replayable(req)
}

func replayable(req *http.Request) bool {
	if req.Body != nil && req.Body != http.NoBody && req.GetBody == nil {
		return false
	}
	switch req.Method {
	case "", http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace:
		return true
	}
	_, key := req.Header["Idempotency-Key"]
	_, xkey := req.Header["X-Idempotency-Key"]
	return key || xkey
}

// rewind returns a copy of req with a new body from GetBody, for a second attempt.
func rewind(req *http.Request) (*http.Request, error) {
	if req.Body == nil || req.Body == http.NoBody {
		return req, nil
	}
	body, err := req.GetBody()
	if err != nil {
		return nil, fmt.Errorf("h1: rewinding the request body: %w", err)
	}
	again := *req
	again.Body = body
	return &again, nil
}

// syncBodyMax is the largest request body written before the answer is read. Anything
// larger, or of unknown length, is written by a second goroutine while this one reads, so an
// answer the server gives before reading the whole body (a 413, a 401) is not lost to a
// write it cut short or blocked. A body this small fits in the socket buffers, so writing it
// first cannot block on a server that stops reading.
const syncBodyMax = 32 << 10

// roundTrip writes req and reads the head of its answer. The connection stays with the
// answer's body until it is read to its end or closed.
func (c *conn) roundTrip(ctx context.Context, req *http.Request) (*http.Response, error) {
	var stop func() bool
	if ctx.Done() != nil {
		stop = context.AfterFunc(ctx, c.interrupt)
	}
	if req.Body != nil && req.Body != http.NoBody && (req.ContentLength <= 0 || req.ContentLength > syncBodyMax) {
		return c.roundTripAsync(req, stop)
	}
	if w := c.write(req); w.err != nil {
		if w.connFailed && !w.nothingSent {
			// The server may have answered before it stopped reading: that answer wins.
			if resp, rerr := c.readHead(req); rerr == nil {
				return c.answer(req, resp, stop, nil, false), nil
			}
		}
		c.release(stop, nil, false)
		return nil, w.error()
	}
	resp, err := c.readHead(req)
	if err != nil {
		c.release(stop, nil, false)
		return nil, err
	}
	return c.answer(req, resp, stop, nil, true), nil
}

// roundTripAsync writes req on another goroutine while it reads the answer.
func (c *conn) roundTripAsync(req *http.Request, stop func() bool) (*http.Response, error) {
	wrote := make(chan writeResult, 1)
	go func() {
		w := c.write(req)
		if w.err != nil && !w.connFailed {
			c.interrupt() // the request's body failed: the server waits for the rest in vain
		}
		wrote <- w
	}()
	resp, err := c.readHead(req)
	if err != nil {
		c.interrupt() // the writer may be blocked on a server that neither reads nor answers
		w := <-wrote
		c.release(stop, nil, false)
		if w.err != nil {
			return nil, w.error()
		}
		return nil, err
	}
	return c.answer(req, resp, stop, wrote, true), nil
}

// writeResult is how the writing of a request ended: whole when err is nil.
type writeResult struct {
	err         error
	connFailed  bool // the connection failed, not the request's own body
	nothingSent bool // the connection failed before any of the request was sent
}

// error is the round trip's error for a failed write: a failure of the connection (which the
// retry rule weighs), or the body's own error.
func (w writeResult) error() error {
	if w.connFailed {
		return &failure{err: w.err, nothingSent: w.nothingSent}
	}
	return w.err
}

// write sends req.
func (c *conn) write(req *http.Request) writeResult {
	before := c.written
	err := req.Write(c.bw)
	if err == nil {
		err = c.bw.Flush()
	}
	if err == nil {
		return writeResult{}
	}
	var ne net.Error
	failed := errors.As(err, &ne)
	return writeResult{err: err, connFailed: failed, nothingSent: failed && c.written == before}
}

// readHead reads the answer's status line and header, past interim 1xx answers.
func (c *conn) readHead(req *http.Request) (*http.Response, error) {
	c.limit = maxHeadBytes
	defer func() { c.limit = math.MaxInt64 }()
	for interim := 0; ; interim++ {
		_, err := c.br.Peek(1)
		if err != nil {
			return nil, &failure{err: err, nothingHeard: interim == 0}
		}
		resp, err := http.ReadResponse(c.br, req)
		if err != nil {
			return nil, err
		}
		switch {
		case resp.StatusCode == http.StatusSwitchingProtocols:
			resp.Body.Close()
			return nil, errors.New("h1: the server switched protocols, which was not asked for")
		case resp.StatusCode >= 100 && resp.StatusCode < 200:
			// 100 Continue, 103 Early Hints: the answer follows.
			if interim == maxInterim {
				return nil, fmt.Errorf("h1: more than %d interim answers", maxInterim)
			}
			continue
		}
		resp.TLS = c.tls
		return resp, nil
	}
}

// answer hands resp to the caller with a body that holds the connection. wrote, when the
// request is still being written, says how that ended; sent says it ended well before the
// answer came.
func (c *conn) answer(req *http.Request, resp *http.Response, stop func() bool, wrote chan writeResult, sent bool) *http.Response {
	// An answer delimited by the end of the stream has resp.Close set.
	keep := sent && !resp.Close && !req.Close
	if resp.Body == http.NoBody {
		c.release(stop, wrote, keep)
		return resp
	}
	resp.Body = &body{rc: resp.Body, c: c, ctx: req.Context(), stop: stop, wrote: wrote, keep: keep}
	return resp
}

// release ends the round trip: the connection goes back to the pool if keep says it may, the
// request was written whole, and the request's context did not interrupt it; else it is
// closed (which also ends a write still going on).
func (c *conn) release(stop func() bool, wrote chan writeResult, keep bool) {
	if stop != nil && !stop() {
		keep = false // interrupt ran, or is running: the deadline is spoiled
	}
	if wrote != nil {
		select {
		case w := <-wrote:
			keep = keep && w.err == nil
		default:
			keep = false // answered before the server read the whole request
		}
	}
	if keep && c.br.Buffered() == 0 {
		c.t.put(c)
		return
	}
	c.close()
}

// errBodyClosed is what a read of a closed answer body returns, as in net/http.
var errBodyClosed = errors.New("http: read on closed response body")

// body is an answer's body, which holds the connection until it is read to its end (the
// connection goes back to the pool) or closed before (the connection is closed).
type body struct {
	rc    io.ReadCloser
	c     *conn
	ctx   context.Context
	stop  func() bool
	wrote chan writeResult
	keep  bool

	mu  sync.Mutex
	end error // set once the body gave up the connection: io.EOF, the read's error, or errBodyClosed
}

func (b *body) Read(p []byte) (int, error) {
	b.mu.Lock()
	end := b.end
	b.mu.Unlock()
	if end != nil {
		return 0, end
	}
	n, err := b.rc.Read(p)
	if err != nil {
		if err != io.EOF && b.ctx.Err() != nil {
			err = context.Cause(b.ctx)
		}
		b.finish(err, err == io.EOF && b.keep)
	}
	return n, err
}

// Close gives the connection up unless the body was read to its end.
func (b *body) Close() error {
	b.finish(errBodyClosed, false)
	return nil
}

// finish records how the body ended and releases the connection, once.
func (b *body) finish(end error, keep bool) {
	b.mu.Lock()
	first := b.end == nil
	if first {
		b.end = end
	} else if b.end == io.EOF && end == errBodyClosed {
		b.end = end // reads after Close fail, as in net/http
	}
	b.mu.Unlock()
	if first {
		b.c.release(b.stop, b.wrote, keep)
	}
}

// hostPort is the URL's host with its port, the scheme's default if it names none.
func hostPort(u *url.URL) string {
	host, port := u.Hostname(), u.Port()
	if port == "" {
		port = "80"
		if u.Scheme == "https" {
			port = "443"
		}
	}
	return net.JoinHostPort(host, port)
}

// closeBody closes the body of a request that will not be sent, as a RoundTripper must.
func closeBody(req *http.Request) {
	if req.Body != nil {
		_ = req.Body.Close()
	}
}
