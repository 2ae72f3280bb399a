package mock

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
)

// routes builds n realistic routes: static, parameter and nested shapes.
func routes(n int) Definitions {
	defs := make(Definitions, n)
	h := JSON(200, map[string]any{"id": 1})
	for i := 0; len(defs) < n; i++ {
		switch i % 4 {
		case 0:
			defs[fmt.Sprintf("GET /api/v1/resource%d", i)] = h
		case 1:
			defs[fmt.Sprintf("GET /api/v1/resource%d/:id", i)] = h
		case 2:
			defs[fmt.Sprintf("POST /api/v1/resource%d/:id/items", i)] = h
		case 3:
			defs[fmt.Sprintf("GET /api/v1/resource%d/:id/items/:item", i)] = h
		}
	}
	defs["GET /api/users/:id"] = h
	return defs
}

// BenchmarkMatch measures one route lookup against 10 and 10,000 routes.
func BenchmarkMatch(b *testing.B) {
	for _, n := range []int{10, 10000} {
		b.Run(fmt.Sprintf("routes=%d", n), func(b *testing.B) {
			m := NewMatcher(DefaultRouteMatchingConfig())
			tb := newTable(compileRoutes(m, routes(n)))
			b.ReportAllocs()
			for b.Loop() {
				var b1, b2 [16]string
				segs := m.split("/api/users/42", b1[:0], false)
				if tb.find("GET", segs, m.foldAll(segs, b2[:0])) == nil {
					b.Fatal("no match")
				}
			}
		})
	}
}

// BenchmarkRoundTrip measures a mocked request through the RoundTripper,
// called directly and through an http.Client.
func BenchmarkRoundTrip(b *testing.B) {
	cfg := DefaultConfig()
	cfg.FallbackToNetwork = false
	ic := New(cfg, WithMocks(Definitions{
		"GET /api/users/:id": JSON(200, map[string]any{"id": 1, "name": "Ada Lovelace", "email": "ada@example.com"}),
	}))
	req := httptest.NewRequest("GET", "http://api.test/api/users/42", nil)
	req.RequestURI = ""
	b.Run("direct", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			resp, err := ic.RoundTrip(req)
			if err != nil {
				b.Fatal(err)
			}
			resp.Body.Close()
		}
	})
	b.Run("http.Client", func(b *testing.B) {
		c := &http.Client{Transport: ic}
		b.ReportAllocs()
		for b.Loop() {
			resp, err := c.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			resp.Body.Close()
		}
	})
	b.Run("routes=10000", func(b *testing.B) {
		big := New(cfg, WithMocks(routes(10000)))
		b.ReportAllocs()
		for b.Loop() {
			resp, err := big.RoundTrip(req)
			if err != nil {
				b.Fatal(err)
			}
			resp.Body.Close()
		}
	})
}

// BenchmarkServeHTTP measures a mocked request through the Handler face
// with a recorder (no network).
func BenchmarkServeHTTP(b *testing.B) {
	ic := New(DefaultConfig(), WithMocks(Definitions{"GET /api/users/:id": JSON(200, map[string]any{"id": 1})}))
	req := httptest.NewRequest("GET", "/api/users/42", nil)
	b.ReportAllocs()
	for b.Loop() {
		ic.ServeHTTP(httptest.NewRecorder(), req)
	}
}
