package cmd

import (
	"bytes"
	"context"
	"errors"
	"maps"
	"net"
	"net/http"
	"os"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/acme/app/internal/store"
)

// listenLog is a factory.listen that opens real listeners and records, per listener name,
// that it was asked for, opened, and closed; wrap, when set, wraps the listener it opens.
type listenLog struct {
	mu             sync.Mutex
	asked          []string
	opened, closed map[string]bool
	wrap           func(name string, ln net.Listener) net.Listener
}

func (l *listenLog) listen(name, addr string) (net.Listener, error) {
	l.mu.Lock()
	l.asked = append(l.asked, name)
	l.mu.Unlock()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.opened == nil {
		l.opened = map[string]bool{}
	}
	l.opened[name] = true
	var out net.Listener = &recordedListener{Listener: ln, onClose: func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.closed == nil {
			l.closed = map[string]bool{}
		}
		l.closed[name] = true
	}}
	if l.wrap != nil {
		out = l.wrap(name, out)
	}
	return out, nil
}

// state returns the names listen was asked for, in order, and those opened and closed.
func (l *listenLog) state() (asked []string, opened, closed map[string]bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.asked), maps.Clone(l.opened), maps.Clone(l.closed)
}

// recordedListener calls onClose when it is closed.
type recordedListener struct {
	net.Listener
	onClose func()
	once    sync.Once
}

func (r *recordedListener) Close() error {
	r.once.Do(r.onClose)
	return r.Listener.Close()
}

// breakingListener's Accept fails for good once broken is closed, as a listener whose socket
// failed would.
type breakingListener struct {
	net.Listener
	broken <-chan struct{}
	closed chan struct{}
	once   sync.Once
}

func (b *breakingListener) Accept() (net.Conn, error) {
	select {
	case <-b.broken:
		return nil, errors.New("accept: the listener's socket failed")
	case <-b.closed:
		return nil, net.ErrClosed
	}
}

func (b *breakingListener) Close() error {
	b.once.Do(func() { close(b.closed) })
	return b.Listener.Close()
}

// Ensure serve stops at start, before the API listens, when the metrics address cannot be
// bound, and closes the metrics listener when the API address cannot be bound: either way it
// exits 1 with one line naming the address, and releases the store.
func TestServe_ListenerInUse(t *testing.T) {
	t.Parallel()
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { busy.Close() })
	for _, tt := range []struct {
		name, addr, metricsAddr string
		wantErr                 string
		wantAsked               []string // the listeners serve tried to open, in order
	}{
		{"Metrics", "127.0.0.1:0", busy.Addr().String(), "metrics: listen on " + busy.Addr().String(), []string{listenerMetrics}},
		{"API", busy.Addr().String(), "127.0.0.1:0", "listen on " + busy.Addr().String(), []string{listenerMetrics, listenerAPI}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			ll := &listenLog{}
			var out, errOut bytes.Buffer
			f := &factory{in: strings.NewReader(""), out: &out, errOut: &errOut,
				getenv: testEnv("APP_METRICS_ADDR", tt.metricsAddr, "APP_LOG_LEVEL", "error"), listen: ll.listen}
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			code := run(ctx, f, []string{"serve", "--addr", tt.addr, "--data-dir", dir})
			lines := strings.Split(strings.TrimSpace(errOut.String()), "\n")
			if code != exitFailure || !strings.Contains(lines[len(lines)-1], "error: "+tt.wantErr) {
				t.Fatalf("serve = %d, stderr %q; want exit 1 ending in the line %q", code, errOut.String(), "error: "+tt.wantErr)
			}
			asked, opened, closed := ll.state()
			if !slices.Equal(asked, tt.wantAsked) {
				t.Fatalf("serve opened the listeners %q, want %q", asked, tt.wantAsked)
			}
			for name := range opened {
				if !closed[name] {
					t.Errorf("the %s listener was left open", name)
				}
			}
			if _, err := os.Stat(store.URIFile(dir)); !os.IsNotExist(err) {
				t.Fatalf("the store was not released: URI file stat %v", err)
			}
		})
	}
}

// Ensure a metrics listener that fails while serving is logged as an error and the API goes
// on serving, and that serve still stops cleanly (exit 0).
func TestServe_MetricsListenerFailsWhileServing(t *testing.T) {
	t.Parallel()
	broken := make(chan struct{})
	ll := &listenLog{wrap: func(name string, ln net.Listener) net.Listener {
		if name != listenerMetrics {
			return ln
		}
		return &breakingListener{Listener: ln, broken: broken, closed: make(chan struct{})}
	}}
	s := startServeWith(t, t.TempDir(), testEnv("APP_METRICS_ADDR", "127.0.0.1:0"), func(f *factory) { f.listen = ll.listen })
	failed := s.logs.logged("metrics listener failed")
	close(broken)
	select {
	case <-failed:
	case <-time.After(30 * time.Second):
		t.Fatalf("no error logged for the failed metrics listener: %s", s.logs.String())
	}
	resp, err := http.Get("http://" + s.addr + "/api/health")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("health after the metrics listener failed: %v %v", resp, err)
	}
	resp.Body.Close()
	if code := s.stop(t); code != 0 {
		t.Fatalf("serve exit %d, want 0: %s", code, s.logs.String())
	}
	if _, _, closed := ll.state(); !closed[listenerAPI] || !closed[listenerMetrics] {
		t.Fatalf("listeners closed at stop: %v, want both", closed)
	}
}

// Ensure serve's collector target applies only when the operator did not set GOGC, and is
// undone by the function it returns.
func TestGCPercentUnlessSet(t *testing.T) {
	current := func() int { p := debug.SetGCPercent(100); debug.SetGCPercent(p); return p }
	before := current()
	t.Setenv("GOGC", "50")
	restore := gcPercentUnlessSet(before + 300)
	if got := current(); got != before {
		t.Fatalf("with GOGC set, the target became %d, want it left at %d", got, before)
	}
	restore()
	os.Unsetenv("GOGC") // t.Setenv puts the variable back after the test
	restore = gcPercentUnlessSet(before + 300)
	if got := current(); got != before+300 {
		t.Fatalf("without GOGC, the target is %d, want %d", got, before+300)
	}
	restore()
	if got := current(); got != before {
		t.Fatalf("restored target %d, want %d", got, before)
	}
}
