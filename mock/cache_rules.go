package mock

import (
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// CacheConfig says which answers the response cache (see [PersistenceConfig]) keeps. The
// defaults never serve a stale or surprising answer: only GET and HEAD requests answered with
// a 2xx status are cached, and an entry is tied to the definition of the route that made it.
type CacheConfig struct {
	// Methods are the request methods whose answers are cached; "*" is any method.
	// Default GET and HEAD.
	Methods []string
	// Statuses are the answer statuses that are cached: a status ("404"), a class ("2xx") or
	// "*" for any. Default 2xx.
	Statuses []string
	// Routes holds, by route key, what the cache needs to know of a route's definition.
	// A route without an entry (or with an empty Digest) has its entries dropped whenever
	// the definitions or the configuration change, since the interceptor cannot tell
	// whether its handler changed.
	Routes map[string]RouteCache
}

// RouteCache is the cache's view of one route.
type RouteCache struct {
	// Digest identifies the route's definition (a hash of its source, say). It is part of
	// the cache key, and entries made under another digest are dropped when the
	// definitions change, also from the persistent storage.
	Digest string
	// Off keeps the route's answers out of the cache (answers that must change between
	// calls: sequences, generated data, random delays).
	Off bool
}

// DefaultCacheConfig returns the cache rules used when Methods or Statuses are empty.
func DefaultCacheConfig() CacheConfig {
	return CacheConfig{Methods: []string{http.MethodGet, http.MethodHead}, Statuses: []string{"2xx"}}
}

func (c CacheConfig) clone() CacheConfig {
	c.Methods = slices.Clone(c.Methods)
	c.Statuses = slices.Clone(c.Statuses)
	c.Routes = maps.Clone(c.Routes)
	return c
}

func (c CacheConfig) withDefaults() CacheConfig {
	d := DefaultCacheConfig()
	if len(c.Methods) == 0 {
		c.Methods = d.Methods
	}
	if len(c.Statuses) == 0 {
		c.Statuses = d.Statuses
	}
	return c
}

// methodCached reports whether answers to method may be cached.
func (c CacheConfig) methodCached(method string) bool {
	for _, m := range c.Methods {
		if m == "*" || strings.EqualFold(m, method) {
			return true
		}
	}
	return false
}

// statusCached reports whether an answer with status may be cached.
func (c CacheConfig) statusCached(status int) bool {
	code := strconv.Itoa(status)
	for _, s := range c.Statuses {
		switch {
		case s == "*" || s == code:
			return true
		case len(s) == 3 && strings.EqualFold(s[1:], "xx") && len(code) == 3 && s[0] == code[0]:
			return true
		}
	}
	return false
}

// ValidCacheStatus reports whether s is a status, a class or "*" as Statuses takes them.
func ValidCacheStatus(s string) bool {
	if s == "*" {
		return true
	}
	if len(s) == 3 && s[0] >= '1' && s[0] <= '5' && strings.EqualFold(s[1:], "xx") {
		return true
	}
	n, err := strconv.Atoi(s)
	return err == nil && n >= 100 && n <= 599
}

// cacheKeySep separates the route and its digest from the request in a cache key.
const cacheKeySep = "\x00"

// keyRoute returns the route key and digest a cache key was made under.
func keyRoute(key string) (route, digest string, ok bool) {
	route, rest, ok := strings.Cut(key, cacheKeySep)
	if !ok {
		return "", "", false
	}
	digest, _, ok = strings.Cut(rest, cacheKeySep)
	return route, digest, ok
}

// retain drops every entry keep refuses, from memory and from the persistent tier.
func (c *cache) retain(keep func(key string) bool) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	var dropped []string
	for el := c.ll.Front(); el != nil; {
		next := el.Next()
		it := el.Value.(*lruItem)
		if !keep(it.key) {
			c.ll.Remove(el)
			delete(c.items, it.key)
			dropped = append(dropped, it.key)
			c.event("drop", it.key, nil)
		}
		el = next
	}
	if c.be != nil && len(dropped) > 0 {
		if err := c.be.remove(dropped...); err != nil {
			c.event("delete", "", err)
		}
	}
	return len(dropped)
}

// keepCurrent is the rule entries survive a change of definitions or configuration by: the
// route still exists, the cache may hold its answers, and it has the same non-empty digest.
func keepCurrent(t *table, cc CacheConfig) func(key string) bool {
	return func(key string) bool {
		route, digest, ok := keyRoute(key)
		if !ok || t.entries[route] == nil {
			return false
		}
		rc, ok := cc.Routes[route]
		return ok && !rc.Off && rc.Digest != "" && rc.Digest == digest
	}
}
