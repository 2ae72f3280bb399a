package mockserver

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strings"
	"testing"
)

// liveHeap is the heap in use after a full collection: what the process holds.
func liveHeap() uint64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// largeMockFile writes a mock file of n routes, as a generated file of a large API has them:
// mostly static answers, one in four with a path parameter, one in eight templated.
func largeMockFile(tb testing.TB, n int) string {
	tb.Helper()
	var b strings.Builder
	b.WriteString("mocks:\n")
	for i := range n {
		switch {
		case i%8 == 0:
			fmt.Fprintf(&b, "  \"GET /api/t%d/:id\":\n    data: {id: \"{{.Params.id}}\", n: %d, name: \"item %d\"}\n", i, i, i)
		case i%4 == 0:
			fmt.Fprintf(&b, "  \"GET /api/p%d/:id\":\n    data: {id: %d, name: \"item %d\", tags: [a, b]}\n", i, i, i)
		default:
			fmt.Fprintf(&b, "  \"GET /api/items/%d\":\n    status: 200\n    data: {id: %d, name: \"item %d\", tags: [a, b]}\n", i, i, i)
		}
	}
	path := filepath.Join(tb.TempDir(), "large.yaml")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		tb.Fatal(err)
	}
	return path
}

// BenchmarkServer_MemoryPerRoute reports the heap a served mock file holds per route
// (B/route): the loaded set, the interceptor's routing table and everything kept beside.
// Run with -benchtime=1x; MOCK_MEM_ROUTES sets the number of routes (default 20,000).
func BenchmarkServer_MemoryPerRoute(b *testing.B) {
	n := 20000
	if v := os.Getenv("MOCK_MEM_ROUTES"); v != "" {
		fmt.Sscan(v, &n)
	}
	path := largeMockFile(b, n)
	for b.Loop() {
		before := liveHeap()
		s, err := New(Options{Logger: quiet, File: path})
		if err != nil {
			b.Fatal(err)
		}
		after := liveHeap()
		b.ReportMetric(float64(after-before)/float64(n), "B/route")
		if out := os.Getenv("MOCK_MEM_PROFILE"); out != "" {
			f, err := os.Create(out)
			if err != nil {
				b.Fatal(err)
			}
			_ = pprof.Lookup("heap").WriteTo(f, 0)
			f.Close()
		}
		runtime.KeepAlive(s)
		s.Close()
	}
}
