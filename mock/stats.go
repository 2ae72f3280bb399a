package mock

import (
	"encoding/json"
	"sort"
	"sync"
	"time"
)

// Bounds on what the statistics keep, so memory stays flat however much
// traffic passes: routes beyond maxTrackedRoutes and methods beyond
// maxTrackedMethods are counted under OtherKey.
const (
	maxTrackedRoutes  = 10000
	maxTrackedMethods = 32
	topRoutesLen      = 10
	unmatchedRingLen  = 64
)

// OtherKey collects the counts of routes or methods beyond the tracking
// bounds in [UsageStats].
const OtherKey = "(other)"

// UsageStats is a snapshot of the interceptor's usage. Its JSON form has camelCase field
// names (totalRequests, requestsByRoute, …), durations in milliseconds and LastReset in
// Unix milliseconds.
type UsageStats struct {
	// TotalRequests counts every request that reached the route lookup.
	TotalRequests int64
	// RequestsByRoute counts matched requests by route key.
	RequestsByRoute map[string]int64
	// RequestsByMethod counts requests by HTTP method.
	RequestsByMethod map[string]int64
	// AverageResponseTime is the mean time to answer a mocked request,
	// delay included.
	AverageResponseTime time.Duration
	// UnmatchedRequests counts requests no route matched.
	UnmatchedRequests int64
	// LastReset is when counting started.
	LastReset time.Time
	// CacheHitRate is hits / (hits + misses) of the response cache; nil
	// when persistence is disabled.
	CacheHitRate *float64
	// TopRoutes lists the most requested routes, most first (at most 10).
	TopRoutes []RouteUsage
}

// RouteUsage is one entry of UsageStats.TopRoutes.
type RouteUsage struct {
	// Route is the route key.
	Route string `json:"route"`
	// Count is the number of requests it answered.
	Count int64 `json:"count"`
	// AverageTime is its mean answer time (milliseconds in JSON).
	AverageTime time.Duration `json:"-"`
}

// MarshalJSON encodes the route usage with averageTime in milliseconds.
func (r RouteUsage) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Route       string  `json:"route"`
		Count       int64   `json:"count"`
		AverageTime float64 `json:"averageTime"`
	}{r.Route, r.Count, ms(r.AverageTime)})
}

// MarshalJSON encodes the stats with camelCase field names, durations in milliseconds and
// LastReset in Unix milliseconds.
func (s UsageStats) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		TotalRequests       int64            `json:"totalRequests"`
		RequestsByRoute     map[string]int64 `json:"requestsByRoute"`
		RequestsByMethod    map[string]int64 `json:"requestsByMethod"`
		AverageResponseTime float64          `json:"averageResponseTime"`
		UnmatchedRequests   int64            `json:"unmatchedRequests"`
		LastReset           int64            `json:"lastReset"`
		CacheHitRate        *float64         `json:"cacheHitRate,omitempty"`
		TopRoutes           []RouteUsage     `json:"topRoutes"`
	}{s.TotalRequests, s.RequestsByRoute, s.RequestsByMethod, ms(s.AverageResponseTime),
		s.UnmatchedRequests, s.LastReset.UnixMilli(), s.CacheHitRate, s.TopRoutes})
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

type counter struct {
	n     int64
	total time.Duration
}

// stats is the bounded, concurrency-safe usage recorder.
type stats struct {
	mu         sync.Mutex
	total      int64
	mocked     counter
	unmatched  int64
	byRoute    map[string]*counter
	byMethod   map[string]int64
	lastReset  time.Time
	hits, miss int64
	ring       [unmatchedRingLen]string
	ringN      int
}

func newStats(now time.Time) *stats {
	return &stats{byRoute: make(map[string]*counter), byMethod: make(map[string]int64), lastReset: now}
}

func (s *stats) countMethod(method string) {
	if _, ok := s.byMethod[method]; !ok && len(s.byMethod) >= maxTrackedMethods {
		method = OtherKey
	}
	s.byMethod[method]++
}

// record counts one mocked request.
func (s *stats) record(route, method string, d time.Duration) {
	s.mu.Lock()
	s.total++
	s.countMethod(method)
	s.mocked.n++
	s.mocked.total += d
	c := s.byRoute[route]
	if c == nil {
		if len(s.byRoute) >= maxTrackedRoutes {
			route = OtherKey
			c = s.byRoute[route]
		}
		if c == nil {
			c = &counter{}
			s.byRoute[route] = c
		}
	}
	c.n++
	c.total += d
	s.mu.Unlock()
}

// recordUnmatched counts one unmatched request and remembers it in the
// ring of recent misses.
func (s *stats) recordUnmatched(method, url string) {
	s.mu.Lock()
	s.total++
	s.countMethod(method)
	s.unmatched++
	s.ring[s.ringN%unmatchedRingLen] = method + " " + url
	s.ringN++
	s.mu.Unlock()
}

func (s *stats) recordCache(hit bool) {
	s.mu.Lock()
	if hit {
		s.hits++
	} else {
		s.miss++
	}
	s.mu.Unlock()
}

func (s *stats) calls(route string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c := s.byRoute[route]; c != nil {
		return int(c.n)
	}
	return 0
}

func (s *stats) recentUnmatched() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := min(s.ringN, unmatchedRingLen)
	out := make([]string, 0, n)
	for i := s.ringN - n; i < s.ringN; i++ {
		out = append(out, s.ring[i%unmatchedRingLen])
	}
	return out
}

func (s *stats) reset(now time.Time) {
	s.mu.Lock()
	s.total, s.mocked, s.unmatched, s.hits, s.miss = 0, counter{}, 0, 0, 0
	s.byRoute = make(map[string]*counter)
	s.byMethod = make(map[string]int64)
	s.ring = [unmatchedRingLen]string{}
	s.ringN = 0
	s.lastReset = now
	s.mu.Unlock()
}

func (s *stats) snapshot(withCache bool) UsageStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := UsageStats{
		TotalRequests:     s.total,
		RequestsByRoute:   make(map[string]int64, len(s.byRoute)),
		RequestsByMethod:  make(map[string]int64, len(s.byMethod)),
		UnmatchedRequests: s.unmatched,
		LastReset:         s.lastReset,
		TopRoutes:         []RouteUsage{},
	}
	if s.mocked.n > 0 {
		out.AverageResponseTime = s.mocked.total / time.Duration(s.mocked.n)
	}
	for k, c := range s.byRoute {
		out.RequestsByRoute[k] = c.n
		out.TopRoutes = append(out.TopRoutes, RouteUsage{Route: k, Count: c.n, AverageTime: c.total / time.Duration(max(c.n, 1))})
	}
	for k, n := range s.byMethod {
		out.RequestsByMethod[k] = n
	}
	sort.Slice(out.TopRoutes, func(i, j int) bool {
		a, b := out.TopRoutes[i], out.TopRoutes[j]
		if a.Count != b.Count {
			return a.Count > b.Count
		}
		return a.Route < b.Route
	})
	if len(out.TopRoutes) > topRoutesLen {
		out.TopRoutes = out.TopRoutes[:topRoutesLen]
	}
	if withCache {
		rate := 0.0
		if s.hits+s.miss > 0 {
			rate = float64(s.hits) / float64(s.hits+s.miss)
		}
		out.CacheHitRate = &rate
	}
	return out
}
