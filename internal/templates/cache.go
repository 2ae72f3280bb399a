package templates

import (
	"slices"
	"sync"
	"time"
)

// Bounds of the list cache: the widget-type filter is client input, so neither the number of
// lists nor the templates they hold may grow without limit.
const (
	maxCachedLists     = 64
	maxCachedTemplates = 10_000
)

// listCache keeps core lists (keyed by the widget-type filter, "" for all) for a short time.
// Every write through the Service drops it, so the Service's own writes are seen at once;
// writes that bypass it (another process on the same store) are seen once an entry expires.
//
// A list read while a write was under way must not outlive that write: get hands out the
// generation it saw, drop advances it, and put keeps a list only if the generation is unchanged.
type listCache struct {
	ttl time.Duration
	now func() time.Time

	mu      sync.Mutex
	gen     uint64
	entries map[string]cachedList
	held    int // templates across entries
}

type cachedList struct {
	ts      []Template
	expires time.Time
}

// newListCache returns a cache whose entries live ttl, or nil (no caching) when ttl <= 0.
func newListCache(ttl time.Duration, now func() time.Time) *listCache {
	if ttl <= 0 {
		return nil
	}
	return &listCache{ttl: ttl, now: now, entries: map[string]cachedList{}}
}

// get returns the live list for key, and the generation to hand to put after a miss.
func (c *listCache) get(key string) ([]Template, uint64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[key]
	if ok && c.now().Before(e.expires) {
		return slices.Clip(e.ts), c.gen, true // clipped: an append by the caller copies
	}
	return nil, c.gen, false
}

// put keeps ts under key unless a write has happened since get returned gen, or the bounds
// would be exceeded (then every entry is dropped first, and ts kept only if it fits alone).
func (c *listCache) put(key string, gen uint64, ts []Template) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen != c.gen || len(ts) > maxCachedTemplates {
		return
	}
	if old, ok := c.entries[key]; ok {
		c.held -= len(old.ts)
		delete(c.entries, key)
	}
	if len(c.entries) >= maxCachedLists || c.held+len(ts) > maxCachedTemplates {
		clear(c.entries)
		c.held = 0
	}
	c.entries[key] = cachedList{ts: ts, expires: c.now().Add(c.ttl)}
	c.held += len(ts)
}

// drop forgets every list; called after each write. A nil cache does nothing.
func (c *listCache) drop() {
	if c == nil {
		return
	}
	c.mu.Lock()
	c.gen++
	clear(c.entries)
	c.held = 0
	c.mu.Unlock()
}
