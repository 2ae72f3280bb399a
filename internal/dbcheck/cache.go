package dbcheck

import (
	"container/list"
	"context"
	"crypto/sha256"
	"sync"
	"sync/atomic"
	"time"

	"go.mongodb.org/mongo-driver/mongo"

	"github.com/acme/app/internal/apperr"
)

// entry is one cached driver client, for one connection string.
type entry struct {
	key       [32]byte
	client    *mongo.Client
	dialer    *dialer
	firstHost string
	selection time.Duration // server selection timeout, for messages
	info      atomic.Pointer[serverInfo]

	// guarded by cache.mu
	refs     int
	lastUsed time.Time
	evicted  bool
	elem     *list.Element
}

// serverInfo is what a test learns once per client: the server's version and cluster name.
type serverInfo struct {
	version, clusterName string
}

// cache keeps driver clients across requests, keyed by (a hash of) the connection string, so
// that repeated calls against one server reuse its connection pool instead of opening a new
// one each time. It holds at most max clients; the least recently used goes first, and a
// client idle longer than idle is closed. A client in use is closed when its last user is done.
type cache struct {
	max  int
	idle time.Duration
	now  func() time.Time

	mu      sync.Mutex
	entries map[[32]byte]*entry
	lru     *list.List // front: most recently used
	closed  bool
	stop    chan struct{}
	wg      sync.WaitGroup // disconnects and the janitor
}

func newCache(max int, idle time.Duration) *cache {
	c := &cache{max: max, idle: idle, now: time.Now, entries: map[[32]byte]*entry{}, lru: list.New(),
		stop: make(chan struct{})}
	c.wg.Add(1)
	go c.janitor()
	return c
}

func (c *cache) janitor() {
	defer c.wg.Done()
	every := min(max(c.idle/2, time.Second), 30*time.Second)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-t.C:
			c.sweep()
		}
	}
}

// sweep closes the clients idle for longer than c.idle.
func (c *cache) sweep() {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	for el := c.lru.Back(); el != nil; {
		prev := el.Prev()
		e := el.Value.(*entry)
		if e.refs == 0 && now.Sub(e.lastUsed) > c.idle {
			c.evictLocked(e)
		}
		el = prev
	}
}

// acquire returns the client for uri, creating it with create on a miss. fresh reports a new
// client. The caller must release the entry.
func (c *cache) acquire(uri string, create func() (*entry, error)) (e *entry, fresh bool, err error) {
	key := sha256.Sum256([]byte(uri))
	if e := c.get(key); e != nil {
		return e, false, nil
	}
	created, err := create()
	if err != nil {
		return nil, false, err
	}
	created.key = key
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		c.disconnectLocked(created)
		return nil, false, apperr.E(apperr.Unavailable, "the server is shutting down")
	}
	if other := c.entries[key]; other != nil { // another request created it meanwhile
		c.disconnectLocked(created)
		c.useLocked(other)
		return other, false, nil
	}
	created.refs = 1
	created.lastUsed = c.now()
	created.elem = c.lru.PushFront(created)
	c.entries[key] = created
	for c.lru.Len() > c.max {
		c.evictLocked(c.lru.Back().Value.(*entry))
	}
	return created, true, nil
}

func (c *cache) get(key [32]byte) *entry {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.entries[key]
	if e == nil {
		return nil
	}
	c.useLocked(e)
	return e
}

// useLocked marks a cached e as in use and most recently used.
func (c *cache) useLocked(e *entry) {
	e.refs++
	e.lastUsed = c.now()
	c.lru.MoveToFront(e.elem)
}

// release ends a use of e; an evicted entry is closed by its last user.
func (c *cache) release(e *entry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e.refs--
	e.lastUsed = c.now()
	if e.evicted && e.refs == 0 {
		c.disconnectLocked(e)
	}
}

// remove drops e from the cache (a client that failed: unreachable, refused credentials), so
// that a dead server does not keep a monitored client alive.
func (c *cache) remove(e *entry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !e.evicted {
		c.evictLocked(e)
	}
}

func (c *cache) evictLocked(e *entry) {
	if c.entries[e.key] == e {
		delete(c.entries, e.key)
	}
	if e.elem != nil {
		c.lru.Remove(e.elem)
		e.elem = nil
	}
	e.evicted = true
	if e.refs == 0 {
		c.disconnectLocked(e)
	}
}

func (c *cache) disconnectLocked(e *entry) {
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = e.client.Disconnect(ctx)
	}()
}

// len returns the number of cached clients.
func (c *cache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}

// close disconnects every client (those in use when their request ends) and waits for the
// disconnects until ctx ends.
func (c *cache) close(ctx context.Context) error {
	c.mu.Lock()
	if !c.closed {
		c.closed = true
		close(c.stop)
		for c.lru.Len() > 0 {
			c.evictLocked(c.lru.Back().Value.(*entry))
		}
	}
	c.mu.Unlock()
	done := make(chan struct{})
	go func() { c.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
