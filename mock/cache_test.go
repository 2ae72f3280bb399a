package mock

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeClock is a settable clock for WithClock.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newClock() *fakeClock { return &fakeClock{now: time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)} }
func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}
func (c *fakeClock) Add(d time.Duration) { c.mu.Lock(); c.now = c.now.Add(d); c.mu.Unlock() }

// counting returns a handler that answers its call number, and the count.
func counting() (Handler, *atomic.Int64) {
	var n atomic.Int64
	return func(_ context.Context, r *Request) (*Response, error) {
		return &Response{Data: map[string]any{"call": n.Add(1), "path": r.Path}}, nil
	}, &n
}

func cachedConfig(storage Storage, dir string) Config {
	cfg := DefaultConfig()
	cfg.FallbackToNetwork = false
	cfg.Persistence.Enabled = true
	cfg.Persistence.Storage = storage
	cfg.Persistence.Dir = dir
	cfg.Persistence.TTL = time.Minute
	cfg.Persistence.MaxCacheSize = 2
	return cfg
}

func body(t *testing.T, c *http.Client, u string) string {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

var storages = []Storage{StorageMemory, StorageIndexedDB, StorageLocalStorage, StorageIntelligent}

// Ensure entries are served until the TTL, then the handler runs again.
func TestCache_TTL(t *testing.T) {
	t.Parallel()
	for _, s := range storages {
		t.Run(string(s), func(t *testing.T) {
			t.Parallel()
			clock := newClock()
			h, n := counting()
			ic := New(cachedConfig(s, t.TempDir()), WithMocks(Definitions{"GET /a": h}), WithClock(clock.Now))
			defer ic.Close()
			c := ic.Client()
			first := body(t, c, "http://t.test/a")
			if got := body(t, c, "http://t.test/A/"); got != first {
				t.Fatalf("normalised URL missed the cache: %s vs %s", got, first)
			}
			clock.Add(59 * time.Second)
			body(t, c, "http://t.test/a")
			if n.Load() != 1 {
				t.Fatalf("handler calls=%d before TTL, want 1", n.Load())
			}
			clock.Add(2 * time.Second)
			if got := body(t, c, "http://t.test/a"); got == first || n.Load() != 2 {
				t.Fatalf("expired entry served: %s (calls %d)", got, n.Load())
			}
			st := ic.Stats()
			if st.CacheHitRate == nil || *st.CacheHitRate != 0.5 {
				t.Fatalf("hit rate=%v, want 0.5", st.CacheHitRate)
			}
		})
	}
}

// Ensure the least recently used entry is evicted beyond MaxCacheSize.
func TestCache_LRU(t *testing.T) {
	t.Parallel()
	for _, s := range storages {
		t.Run(string(s), func(t *testing.T) {
			t.Parallel()
			h, n := counting()
			ic := New(cachedConfig(s, t.TempDir()), WithMocks(Definitions{"GET /:p": h}), WithClock(newClock().Now))
			defer ic.Close()
			c := ic.Client()
			body(t, c, "http://t.test/a") // call 1
			body(t, c, "http://t.test/b") // call 2
			body(t, c, "http://t.test/a") // hit: a is now most recent
			body(t, c, "http://t.test/c") // call 3, evicts b
			body(t, c, "http://t.test/a") // hit
			if n.Load() != 3 {
				t.Fatalf("calls=%d, want 3", n.Load())
			}
			body(t, c, "http://t.test/b") // evicted: call 4
			if n.Load() != 4 {
				t.Fatalf("calls=%d after evicted key, want 4", n.Load())
			}
			if got := ic.state.Load().cache.len(); got != 2 {
				t.Fatalf("cache len=%d, want 2", got)
			}
		})
	}
}

// Ensure the cache survives a restart for every persistent storage, and
// the body hash is part of the key.
func TestCache_RestartPersistence(t *testing.T) {
	t.Parallel()
	for _, s := range storages[1:] {
		t.Run(string(s), func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			clock := newClock()
			h1, _ := counting()
			cfg := cachedConfig(s, dir)
			cfg.Cache.Methods = []string{"*"} // POST too: the body is part of the key
			cfg.Cache.Routes = map[string]RouteCache{"* /a": {Digest: "v1"}}
			ic := New(cfg, WithMocks(Definitions{"* /a": h1}), WithClock(clock.Now))
			first := body(t, ic.Client(), "http://t.test/a")
			resp, err := ic.Client().Post("http://t.test/a", "application/json", strings.NewReader(`{"x":1}`))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if err := ic.Close(); err != nil {
				t.Fatal(err)
			}
			h2, n2 := counting()
			ic2 := New(cfg, WithMocks(Definitions{"* /a": h2}), WithClock(clock.Now))
			defer ic2.Close()
			if got := body(t, ic2.Client(), "http://t.test/a"); got != first {
				t.Fatalf("after restart got %s, want the cached %s", got, first)
			}
			if n2.Load() != 0 {
				t.Fatalf("handler ran %d times after restart, want 0", n2.Load())
			}
			resp, err = ic2.Client().Post("http://t.test/a", "application/json", strings.NewReader(`{"x":2}`))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if n2.Load() != 1 {
				t.Fatalf("a different body hit the cache")
			}
		})
	}
}

// Ensure the files land where the configuration says.
func TestCache_Files(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := cachedConfig(StorageIndexedDB, dir)
	cfg.Persistence.DBName = "mocks"
	ic := New(cfg)
	ic.Close()
	cfg = cachedConfig(StorageLocalStorage, dir)
	cfg.Persistence.Namespace = "team-a"
	ic = New(cfg, WithMocks(Definitions{"GET /x": JSON(200, 1)}))
	body(t, ic.Client(), "http://t.test/x")
	ic.Close()
	for _, f := range []string{"mocks.db", "team-a.json"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
	}
}

// Ensure a changed DBVersion empties the bbolt store.
func TestCache_DBVersionReset(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := cachedConfig(StorageIndexedDB, dir)
	h, n := counting()
	ic := New(cfg, WithMocks(Definitions{"GET /a": h}))
	body(t, ic.Client(), "http://t.test/a")
	ic.Close()
	cfg.Persistence.DBVersion = 2
	ic = New(cfg, WithMocks(Definitions{"GET /a": h}))
	defer ic.Close()
	body(t, ic.Client(), "http://t.test/a")
	if n.Load() != 2 {
		t.Fatalf("calls=%d, want 2: the version change must reset the store", n.Load())
	}
}

// Ensure a storage failure is logged as PERSISTENCE_ERROR and requests are
// still answered.
func TestCache_PersistenceFailure(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	blocker := filepath.Join(dir, "file")
	os.WriteFile(blocker, []byte("x"), 0o600)
	var buf bytes.Buffer
	var mu sync.Mutex
	cfg := cachedConfig(StorageIndexedDB, filepath.Join(blocker, "sub")) // a directory under a file cannot exist
	cfg.Logging.Enabled = true
	ic := New(cfg, WithMocks(Definitions{"GET /a": JSON(200, "ok")}),
		WithLogger(slog.New(slog.NewTextHandler(&lockedWriter{w: &buf, mu: &mu}, nil))))
	defer ic.Close()
	if got := body(t, ic.Client(), "http://t.test/a"); got != `"ok"` {
		t.Fatalf("body=%s", got)
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(buf.String(), "PERSISTENCE_ERROR") {
		t.Fatalf("log lacks PERSISTENCE_ERROR:\n%s", buf.String())
	}
}

// Ensure AutoCleanup removes expired entries without a lookup of them.
func TestCache_AutoCleanup(t *testing.T) {
	t.Parallel()
	for _, auto := range []bool{true, false} {
		t.Run(fmt.Sprint(auto), func(t *testing.T) {
			t.Parallel()
			clock := newClock()
			cfg := cachedConfig(StorageMemory, "")
			cfg.Persistence.AutoCleanup = auto
			cfg.Persistence.MaxCacheSize = 10
			h, _ := counting()
			ic := New(cfg, WithMocks(Definitions{"GET /:p": h}), WithClock(clock.Now))
			body(t, ic.Client(), "http://t.test/a")
			body(t, ic.Client(), "http://t.test/b")
			clock.Add(2 * time.Minute)
			body(t, ic.Client(), "http://t.test/c")
			want := 3
			if auto {
				want = 1
			}
			if got := ic.state.Load().cache.len(); got != want {
				t.Fatalf("entries=%d, want %d", got, want)
			}
		})
	}
}

// Ensure a cache hit answers the same bytes as the miss that stored it,
// for every storage, including a string Data whose encoding depends on
// the Content-Type that the default headers supply.
func TestCache_HitEqualsMiss(t *testing.T) {
	t.Parallel()
	for _, s := range storages {
		t.Run(string(s), func(t *testing.T) {
			t.Parallel()
			ic := New(cachedConfig(s, t.TempDir()), WithMocks(Definitions{
				"GET /json": JSON(200, "hello"),
				"GET /text": Static(Response{Data: "hello", Headers: map[string]string{"content-type": "text/plain"}}),
				"GET /obj":  JSON(200, map[string]any{"a": 1}),
			}), WithClock(newClock().Now))
			defer ic.Close()
			c := ic.Client()
			for path, want := range map[string]string{"/json": `"hello"`, "/text": "hello", "/obj": `{"a":1}`} {
				miss := body(t, c, "http://t.test"+path)
				hit := body(t, c, "http://t.test"+path)
				if miss != want || hit != want {
					t.Errorf("%s: miss=%s hit=%s, want %s both times", path, miss, hit, want)
				}
			}
			if st := ic.Stats(); st.CacheHitRate == nil || *st.CacheHitRate != 0.5 {
				t.Fatalf("hit rate=%v, want 0.5", st.CacheHitRate)
			}
		})
	}
}

// Ensure entries sort oldest first, and entries stored at the same time
// keep their order.
func TestSortEntries(t *testing.T) {
	t.Parallel()
	t0 := newClock().Now()
	at := func(key string, d time.Duration) *cachedEntry { return &cachedEntry{Key: key, StoredAt: t0.Add(d)} }
	es := []*cachedEntry{at("c", 2), at("a1", 0), at("b", 1), at("a2", 0), at("a3", 0)}
	sortEntries(es)
	var got []string
	for _, e := range es {
		got = append(got, e.Key)
	}
	if want := "a1 a2 a3 b c"; strings.Join(got, " ") != want {
		t.Fatalf("order %v, want %s", got, want)
	}
}

// Ensure the cache never answers for an old definition or an answer it should not keep: by
// default only GET and HEAD answered 2xx are stored; a route marked Off is never stored; a
// changed digest (after a restart or a reconfiguration) drops the old entries, from the
// persistent tier too; methods and statuses are opt-in.
func TestCache_NeverStale(t *testing.T) {
	t.Parallel()
	for _, s := range storages {
		t.Run(string(s), func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			routes := func(digest string) map[string]RouteCache {
				return map[string]RouteCache{"* /a": {Digest: digest}, "GET /fail": {Digest: "f"}, "GET /seq": {Digest: "s", Off: true}}
			}
			failing := func(_ context.Context, _ *Request) (*Response, error) {
				return &Response{Status: 500, Data: map[string]any{"oops": true}}, nil
			}
			h, n := counting()
			hs, ns := counting()
			var nf atomic.Int64
			fail := func(ctx context.Context, r *Request) (*Response, error) { nf.Add(1); return failing(ctx, r) }
			defs := Definitions{"* /a": h, "GET /fail": fail, "GET /seq": hs}
			cfg := cachedConfig(s, dir)
			cfg.Persistence.MaxCacheSize = 100
			cfg.Cache.Routes = routes("v1")
			ic := New(cfg, WithMocks(defs))
			c := ic.Client()
			for range 2 {
				body(t, c, "http://t.test/a")
				body(t, c, "http://t.test/fail")
				body(t, c, "http://t.test/seq")
				resp, err := c.Post("http://t.test/a", "application/json", strings.NewReader(`{}`))
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
			}
			if n.Load() != 3 || nf.Load() != 2 || ns.Load() != 2 {
				t.Fatalf("handler runs: /a %d (want 3: GET cached, POST not), /fail %d (want 2), /seq %d (want 2)", n.Load(), nf.Load(), ns.Load())
			}

			// The same definition keeps its entry across a reconfiguration; a new digest does not.
			if err := ic.Configure(cfg, defs); err != nil {
				t.Fatal(err)
			}
			body(t, c, "http://t.test/a")
			if n.Load() != 3 {
				t.Fatalf("an unchanged route lost its entry on reconfiguration")
			}
			cfg2 := cfg
			cfg2.Cache.Routes = routes("v2")
			if err := ic.Configure(cfg2, defs); err != nil {
				t.Fatal(err)
			}
			if got := body(t, c, "http://t.test/a"); !strings.Contains(got, `"call":4`) {
				t.Fatalf("after a definition change got %s, want a fresh answer", got)
			}
			if err := ic.Close(); err != nil {
				t.Fatal(err)
			}

			// A restart under another digest does not answer from the persisted entry.
			h3, n3 := counting()
			cfg3 := cfg
			cfg3.Cache.Routes = routes("v3")
			ic3 := New(cfg3, WithMocks(Definitions{"* /a": h3}))
			defer ic3.Close()
			body(t, ic3.Client(), "http://t.test/a")
			if n3.Load() != 1 {
				t.Fatalf("after a restart with a changed definition the handler ran %d times, want 1", n3.Load())
			}
			if got := ic3.state.Load().cache.len(); got != 1 {
				t.Fatalf("cache holds %d entries, want only the new one", got)
			}

			// Opt-in: every method and every status.
			cfg4 := cachedConfig(StorageMemory, "")
			cfg4.Cache = CacheConfig{Methods: []string{"*"}, Statuses: []string{"*"}, Routes: map[string]RouteCache{"GET /fail": {Digest: "f"}, "POST /p": {Digest: "p"}}}
			hp, np := counting()
			nf.Store(0)
			ic4 := New(cfg4, WithMocks(Definitions{"GET /fail": fail, "POST /p": hp}))
			defer ic4.Close()
			for range 2 {
				body(t, ic4.Client(), "http://t.test/fail")
				resp, err := ic4.Client().Post("http://t.test/p", "application/json", strings.NewReader(`{}`))
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
			}
			if nf.Load() != 1 || np.Load() != 1 {
				t.Fatalf("opt-in: /fail ran %d, POST /p ran %d, want 1 and 1", nf.Load(), np.Load())
			}
		})
	}
}
