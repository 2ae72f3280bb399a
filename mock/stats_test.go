package mock

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// Ensure the stats count routes, methods, unmatched requests, times and
// top routes, and that reset starts over.
func TestStats(t *testing.T) {
	t.Parallel()
	clock := newClock()
	step := func(context.Context, *Request) (*Response, error) {
		clock.Add(10 * time.Millisecond) // each answer "takes" 10ms on the fake clock
		return &Response{Data: "ok"}, nil
	}
	ic := newTest(t, Definitions{"GET /a": step, "POST /b": step, "GET /never": step}, WithClock(clock.Now))
	c := ic.Client()
	for range 3 {
		body(t, c, "http://t.test/a")
	}
	resp, _ := c.Post("http://t.test/b", "", nil)
	resp.Body.Close()
	c.Get("http://t.test/missing")
	s := ic.Stats()
	if s.TotalRequests != 5 || s.UnmatchedRequests != 1 {
		t.Fatalf("total=%d unmatched=%d, want 5 and 1", s.TotalRequests, s.UnmatchedRequests)
	}
	if s.RequestsByRoute["GET /a"] != 3 || s.RequestsByRoute["POST /b"] != 1 || s.RequestsByMethod["GET"] != 4 || s.RequestsByMethod["POST"] != 1 {
		t.Fatalf("by route %v, by method %v", s.RequestsByRoute, s.RequestsByMethod)
	}
	if s.AverageResponseTime != 10*time.Millisecond {
		t.Fatalf("average=%v, want 10ms", s.AverageResponseTime)
	}
	if len(s.TopRoutes) != 2 || s.TopRoutes[0].Route != "GET /a" || s.TopRoutes[0].Count != 3 || s.TopRoutes[0].AverageTime != 10*time.Millisecond {
		t.Fatalf("top routes %+v", s.TopRoutes)
	}
	if s.CacheHitRate != nil {
		t.Fatal("cacheHitRate set without persistence")
	}
	b, _ := json.Marshal(s)
	for _, k := range []string{`"totalRequests":5`, `"averageResponseTime":10`, `"topRoutes":[{"route":"GET /a","count":3,"averageTime":10}`, `"lastReset":`} {
		if !strings.Contains(string(b), k) {
			t.Fatalf("JSON %s lacks %s", b, k)
		}
	}
	if p := ic.Pending(); len(p) != 1 || p[0] != "GET /never" {
		t.Fatalf("Pending=%v", p)
	}
	rec := &recTB{}
	ic.Verify(rec)
	if len(rec.errs) != 2 || !strings.Contains(rec.errs[0], "GET /never") || !strings.Contains(rec.errs[1], "/missing") {
		t.Fatalf("Verify reported %v", rec.errs)
	}
	clock.Add(time.Hour)
	ic.ResetStats()
	s = ic.Stats()
	if s.TotalRequests != 0 || len(s.RequestsByRoute) != 0 || !s.LastReset.Equal(clock.Now()) || ic.Calls("GET /a") != 0 {
		t.Fatalf("after reset: %+v", s)
	}
}

type recTB struct{ errs []string }

func (r *recTB) Helper() {}
func (r *recTB) Errorf(f string, a ...any) {
	r.errs = append(r.errs, fmt.Sprintf(f, a...))
}

// Ensure what grows with traffic stays bounded: many distinct methods and
// unmatched URLs do not grow the stats beyond their limits.
func TestStats_Bounded(t *testing.T) {
	t.Parallel()
	ic := newTest(t, Definitions{"* /x/:id": JSON(200, 1)})
	for i := range 2000 {
		w := httptest.NewRecorder()
		ic.ServeHTTP(w, httptest.NewRequest(fmt.Sprintf("M%d", i), fmt.Sprintf("/x/%d", i), nil))
		ic.ServeHTTP(w, httptest.NewRequest("GET", fmt.Sprintf("/miss/%d", i), nil))
	}
	s := ic.Stats()
	if len(s.RequestsByMethod) > maxTrackedMethods+1 || s.RequestsByMethod[OtherKey] == 0 {
		t.Fatalf("methods tracked=%d, other=%d", len(s.RequestsByMethod), s.RequestsByMethod[OtherKey])
	}
	if got := len(ic.Unmatched()); got != unmatchedRingLen {
		t.Fatalf("unmatched ring=%d, want %d", got, unmatchedRingLen)
	}
	if s.TotalRequests != 4000 || s.RequestsByRoute["* /x/:id"] != 2000 {
		t.Fatalf("counts: %d %v", s.TotalRequests, s.RequestsByRoute)
	}
}

// Ensure the fixed and ranged delays are applied and a per-response delay
// wins; the delay ends with the context.
func TestDelay(t *testing.T) {
	t.Parallel()
	for range 100 {
		if d := Between(2*time.Millisecond, 4*time.Millisecond).Pick(); d < 2*time.Millisecond || d > 4*time.Millisecond {
			t.Fatalf("Pick=%v outside [2ms,4ms]", d)
		}
	}
	if Fixed(3*time.Millisecond).Pick() != 3*time.Millisecond || !(Delay{}).IsZero() || Fixed(1).IsRange() {
		t.Fatal("fixed delay")
	}
	cfg := DefaultConfig()
	cfg.FallbackToNetwork = false
	cfg.Delay = Fixed(time.Hour)
	ic := New(cfg, WithMocks(Definitions{
		"GET /fast": Static(Response{Data: 1, Delay: time.Nanosecond}),
		"GET /slow": JSON(200, 2),
	}))
	if got := body(t, ic.Client(), "http://t.test/fast"); got != "1" {
		t.Fatalf("per-response delay did not override: %s", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	req := httptest.NewRequest("GET", "http://t.test/slow", nil).WithContext(ctx)
	req.RequestURI = ""
	if _, err := ic.Client().Do(req); err == nil || !strings.Contains(err.Error(), "deadline") {
		t.Fatalf("err=%v, want deadline exceeded", err)
	}
}
