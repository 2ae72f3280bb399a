package mockserver

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/acme/app/mock/mockfile"
)

// benchServe measures one request through the whole server (CORS check, interceptor, handler)
// without the network.
func benchServe(b *testing.B, file string) {
	set, err := mockfile.Parse([]byte(file), "bench.yaml")
	if err != nil {
		b.Fatal(err)
	}
	s := &Server{opts: Options{Logger: quiet}, log: quiet, runtime: map[string]mockfile.Route{}, removed: map[string]bool{}}
	srv, err := New(Options{Logger: quiet, API: http.NotFoundHandler()})
	if err != nil {
		b.Fatal(err)
	}
	s.ic = srv.ic
	if err := s.apply(set); err != nil {
		b.Fatal(err)
	}
	req := httptest.NewRequest("GET", "/api/users/42", nil)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		w := httptest.NewRecorder()
		s.ServeHTTP(w, req)
		if w.Code != http.StatusOK {
			b.Fatal(w.Code)
		}
	}
}

func BenchmarkServe_Static(b *testing.B) {
	benchServe(b, "mocks:\n  \"GET /api/users/:id\":\n    data: {id: \"42\", name: Ada Lovelace, email: ada@example.com}\n")
}

func BenchmarkServe_Templated(b *testing.B) {
	benchServe(b, "mocks:\n  \"GET /api/users/:id\":\n    data: {id: \"{{.Params.id}}\", name: Ada Lovelace, email: ada@example.com}\n")
}
