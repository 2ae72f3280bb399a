package wiremock

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// discard is a ResponseWriter that keeps nothing but a header map, so a benchmark measures the
// handler, not a recorder.
type discard struct{ h http.Header }

func (d *discard) Header() http.Header         { return d.h }
func (d *discard) Write(p []byte) (int, error) { return len(p), nil }
func (d *discard) WriteHeader(int)             {}

// BenchmarkServe answers GET /api/users/42 from WireMock's documentation examples in
// testdata/examples (the mappings bench/mock_compare.sh serves): the per-request work of
// `app mock serve --wiremock`.
func BenchmarkServe(b *testing.B) {
	s, problems, err := Load("testdata/examples")
	if err != nil || len(problems) > 0 {
		b.Fatal(err, problems)
	}
	r := httptest.NewRequest(http.MethodGet, "/api/users/42", nil)
	w := &discard{h: http.Header{}}
	b.ReportAllocs()
	for b.Loop() {
		clear(w.h)
		s.ServeHTTP(w, r)
	}
	if w.h.Get("Content-Type") != "application/json" {
		b.Fatalf("answered %v", w.h)
	}
}
