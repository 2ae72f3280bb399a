package openapi

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/acme/app/mock"
)

// benchOp loads the benchmark description and returns its operation for key.
func benchOp(b *testing.B, key string) (*answerer, *operation) {
	b.Helper()
	spec, err := Load("testdata/bench.yaml")
	if err != nil {
		b.Fatal(err)
	}
	a := &answerer{s: spec}
	for _, op := range spec.ops {
		if op.key == key {
			return a, op
		}
	}
	b.Fatalf("no operation %s", key)
	return nil, nil
}

// BenchmarkValidateBody is the cost of checking a 1 KB JSON body against a schema of 20
// properties, reported as ns/op and as the median of single runs (p50-ns): "raw" decodes the
// body first, "decoded" starts from the body the interceptor has already decoded (as served).
func BenchmarkValidateBody(b *testing.B) {
	body, err := os.ReadFile("testdata/bench-body.json")
	if err != nil {
		b.Fatal(err)
	}
	var decoded any
	if err := json.Unmarshal(body, &decoded); err != nil {
		b.Fatal(err)
	}
	_, op := benchOp(b, "POST /items")
	for _, bc := range []struct {
		name string
		req  *mock.Request
	}{
		{"raw", &mock.Request{Method: "POST", Header: http.Header{"Content-Type": {"application/json"}}, RawBody: body}},
		{"decoded", &mock.Request{Method: "POST", Header: http.Header{"Content-Type": {"application/json"}}, RawBody: body, Body: decoded}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			if v, err := op.validate(bc.req, nil); err != nil || len(v) > 0 {
				b.Fatalf("the benchmark body is not valid: %v %v", err, v)
			}
			times := make([]time.Duration, 0, b.N)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				start := time.Now()
				_, _ = op.validate(bc.req, nil)
				times = append(times, time.Since(start))
			}
			b.StopTimer()
			slices.Sort(times)
			b.ReportMetric(float64(times[len(times)/2].Nanoseconds()), "p50-ns")
		})
	}
}

// BenchmarkAnswerStatic is the handler's work for a static answer: routing aside, the
// security check, parameter validation, negotiation and the prepared body.
func BenchmarkAnswerStatic(b *testing.B) {
	a, op := benchOp(b, "GET /items/:id")
	h := a.handler(op)
	req := &mock.Request{Method: "GET", Params: map[string]string{"id": "7"}, Header: http.Header{}}
	b.ReportAllocs()
	for b.Loop() {
		if r, _ := h(context.Background(), req); r.Status != 200 {
			b.Fatalf("status %d", r.Status)
		}
	}
}
