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

// BenchmarkServe answers GET /api/users/42 from WireMock's documentation examples (the mapping
// set of bench/mock_compare.sh): the per-request work of `app mock serve --wiremock`.
func BenchmarkServe(b *testing.B) {
	dir := writeDir(b, map[string]string{"mappings/examples.json": `{"mappings": [
 {"request": {"method": "GET", "urlPathTemplate": "/api/users/{id}"},
  "response": {"status": 200, "headers": {"Content-Type": "application/json"}, "jsonBody": {"id": "42", "name": "Ada Lovelace", "email": "ada@example.com"}}},
 {"request": {"method": "GET", "url": "/some/thing"},
  "response": {"status": 200, "body": "Hello, world!", "headers": {"Content-Type": "text/plain"}}},
 {"request": {"method": "GET", "urlPath": "/everything", "queryParameters": {"search_term": {"equalTo": "WireMock"}}, "headers": {"Accept": {"contains": "xml"}}},
  "response": {"status": 200, "body": "<everything/>"}},
 {"request": {"method": "POST", "urlPathPattern": "/api/orders/[0-9]+", "bodyPatterns": [{"equalToJson": {"total": 10}, "ignoreExtraElements": true}]},
  "response": {"status": 201, "jsonBody": {"created": true}}},
 {"priority": 10, "request": {"method": "ANY", "urlPattern": "/.*"},
  "response": {"status": 404, "jsonBody": {"status": "Error", "message": "Endpoint not found"}}}
]}`})
	s, problems, err := Load(dir)
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
