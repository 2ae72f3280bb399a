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
	"net"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"
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
	ctx := req.Context()
	key := connKey{https: u.Scheme == "https", addr: hostPort(u)}
	for retried := false; ; retried = true {
		if err := ctx.Err(); err != nil {
			closeBody(req)
			return nil, context.Cause(ctx)
		}
		c, reused, err := t.conn(ctx, key, u)
		if err != nil {
			closeBody(req)
			if ctx.Err() != nil {
				return nil, context.Cause(ctx)
			}
			return nil, err
		}
		resp, err := c.roundTrip(ctx, req)
		if err == nil {
			return resp, nil
		}
		if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		var f *failure
		if !errors.As(err, &f) || retried || !reused || !f.retryable(req) {
			return nil, err
		}
		// The server closed a kept-alive connection under us, where net/http would also try
		// again: once more on a new connection, with the body rewound.
		if req, err = rewind(req); err != nil {
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
		t.janitor = time.AfterFunc(t.idleTimeout(), t.sweep)
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

// sweep closes the connections idle for IdleConnTimeout, and comes back while any are left.
func (t *Transport) sweep() {
	timeout := t.idleTimeout()
	cutoff := time.Now().Add(-timeout)
	var expired []*conn
	t.mu.Lock()
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
		t.janitor = time.AfterFunc(time.Until(oldest.Add(timeout)), t.sweep)
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
	c.br = bufio.NewReaderSize(c.nc, 4<<10)
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
	idleSince time.Time
}

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

// roundTrip writes req and reads the head of its answer. The connection stays with the
// answer's body until it is read to its end or closed.
func (c *conn) roundTrip(ctx context.Context, req *http.Request) (*http.Response, error) {
	var stop func() bool
	if ctx.Done() != nil {
		stop = context.AfterFunc(ctx, c.interrupt)
	}
	before := c.written
	err := req.Write(c.bw)
	if err == nil {
		err = c.bw.Flush()
	}
	if err != nil {
		c.abandon(stop)
		return nil, &failure{err: err, nothingSent: c.written == before}
	}
	resp, err := c.readHead(req)
	if err != nil {
		c.abandon(stop)
		return nil, err
	}
	keep := !resp.Close && !req.Close && (resp.ContentLength >= 0 || len(resp.TransferEncoding) > 0)
	if resp.Body == http.NoBody {
		c.release(stop, keep)
		return resp, nil
	}
	resp.Body = &body{rc: resp.Body, c: c, ctx: ctx, stop: stop, keep: keep}
	return resp, nil
}

// readHead reads the answer's status line and header, past any interim 1xx answer.
func (c *conn) readHead(req *http.Request) (*http.Response, error) {
	for {
		_, err := c.br.Peek(1)
		if err != nil {
			return nil, &failure{err: err, nothingHeard: true}
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
			continue // 100 Continue, 103 Early Hints: the answer follows
		}
		resp.TLS = c.tls
		return resp, nil
	}
}

// abandon gives up the connection after a failed round trip.
func (c *conn) abandon(stop func() bool) {
	if stop != nil {
		stop()
	}
	c.close()
}

// release ends the round trip: the connection goes back to the pool if keep says it may
// and the request's context did not interrupt it, else it is closed.
func (c *conn) release(stop func() bool, keep bool) {
	if stop != nil && !stop() {
		keep = false // interrupt ran, or is running: the deadline is spoiled
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
	rc   io.ReadCloser
	c    *conn
	ctx  context.Context
	stop func() bool
	keep bool
	done atomic.Bool // released
	eof  atomic.Bool // read to its end
}

func (b *body) Read(p []byte) (int, error) {
	if b.done.Load() {
		if b.eof.Load() {
			return 0, io.EOF
		}
		return 0, errBodyClosed
	}
	n, err := b.rc.Read(p)
	switch {
	case err == io.EOF:
		b.eof.Store(true)
		b.end(b.keep)
	case err != nil:
		if b.ctx.Err() != nil {
			err = context.Cause(b.ctx)
		}
		b.end(false)
	}
	return n, err
}

// Close gives the connection up unless the body was read to its end.
func (b *body) Close() error {
	b.end(false)
	return nil
}

func (b *body) end(keep bool) {
	if b.done.CompareAndSwap(false, true) {
		b.c.release(b.stop, keep)
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
