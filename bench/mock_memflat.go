//go:build ignore

// mock_memflat sends ten million mocked requests through one interceptor,
// each with a distinct URL (and every 1000th unmatched, with a rotating
// method), and prints the live heap after each million: it must stay flat.
// Run: go run bench/mock_memflat.go
package main

import (
	"fmt"
	"net/http"
	"net/url"
	"runtime"
	"strconv"

	"github.com/acme/app/mock"
)

func main() {
	cfg := mock.DefaultConfig()
	cfg.FallbackToNetwork = false
	cfg.Persistence.Enabled = true // memory cache, bounded by MaxCacheSize
	ic := mock.New(cfg, mock.WithMocks(mock.Definitions{
		"* /api/users/:id": mock.JSON(200, map[string]any{"id": 1, "name": "Ada Lovelace"}),
	}))
	req := &http.Request{Method: "GET", Header: http.Header{}}
	var ms runtime.MemStats
	for i := 1; i <= 10_000_000; i++ {
		p := "/api/users/" + strconv.Itoa(i)
		if i%1000 == 0 {
			p = "/missing/" + strconv.Itoa(i)
			req.Method = "M" + strconv.Itoa(i%97)
		} else {
			req.Method = "GET"
		}
		req.URL = &url.URL{Scheme: "http", Host: "api.test", Path: p}
		if resp, err := ic.RoundTrip(req); err == nil {
			resp.Body.Close()
		}
		if i%1_000_000 == 0 {
			runtime.GC()
			runtime.ReadMemStats(&ms)
			fmt.Printf("requests=%d heap_alloc=%.1fMiB\n", i, float64(ms.HeapAlloc)/(1<<20))
		}
	}
	s := ic.Stats()
	fmt.Printf("total=%d unmatched=%d methods=%d routes=%d\n", s.TotalRequests, s.UnmatchedRequests, len(s.RequestsByMethod), len(s.RequestsByRoute))
}
