package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/acme/app/internal/ai"
	"github.com/acme/app/internal/ai/aitest"
	"github.com/acme/app/internal/auth"
	"github.com/acme/app/internal/store/storetest"
	"github.com/acme/app/internal/usage"
)

// discardRecorder counts records and keeps none.
type discardRecorder struct{}

func (discardRecorder) Record(context.Context, usage.Record) error { return nil }

// bareTransport serves the do-nothing forwarders of the benchmarks: net/http's Transport,
// configured as the service's.
var bareTransport = ai.NewTransport(256)

// fastUpstream is an in-process OpenAI fake answering one fixed completion as fast as it can.
func fastUpstream(b *testing.B) *httptest.Server {
	answer, _ := json.Marshal(aitest.OpenAIAnswer("gpt-4o-mini-2024-07-18", "Hello! How can I help you today?", 12, 9, 0))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(answer)
	}))
	b.Cleanup(srv.Close)
	return srv
}

// drive posts body to url from `clients` concurrent keep-alive clients, b.N requests in all,
// and reports requests/s and the p50 latency.
func drive(b *testing.B, clients int, url, token string, body []byte) {
	b.Helper()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients * 2, MaxIdleConns: clients * 2}}
	defer client.CloseIdleConnections()
	var mu sync.Mutex
	lat := make([]time.Duration, 0, b.N)
	b.SetParallelism((clients + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	post := requester(client, "POST", url, token, body)
	b.RunParallel(func(pb *testing.PB) {
		mine := make([]time.Duration, 0, 1024)
		for pb.Next() {
			t := time.Now()
			if err := post(); err != nil {
				b.Error(err)
				return
			}
			mine = append(mine, time.Since(t))
		}
		mu.Lock()
		lat = append(lat, mine...)
		mu.Unlock()
	})
	elapsed := time.Since(start)
	b.StopTimer()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "req/s")
	if len(lat) > 0 {
		b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds())/1000, "p50-µs")
	}
}

// bareProxy serves a proxy to upstream over rt that does nothing but forward the body and copy
// the answer back; with contractHeaders it also sends and answers the headers of our contract.
func bareProxy(b *testing.B, rt http.RoundTripper, upstream string, contractHeaders bool) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		req, _ := http.NewRequestWithContext(r.Context(), "POST", upstream+"/v1/chat/completions", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if contractHeaders {
			req.Header.Set("Accept", "application/json")
			req.Header.Set("Authorization", "Bearer sk-bench")
		}
		resp, err := rt.RoundTrip(req)
		if err != nil {
			w.WriteHeader(http.StatusBadGateway)
			return
		}
		answer, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		h := w.Header()
		h.Set("Content-Type", "application/json")
		if contractHeaders {
			h.Set("X-Request-Id", "0b7c7f54-2d0a-4f3e-9a57-3f1c2f9b8a11")
			h.Set("X-Ratelimit-Limit", "100")
			h.Set("X-Ratelimit-Remaining", "99")
			h.Set("X-Ratelimit-Reset", "60")
		}
		_, _ = w.Write(answer)
	}))
	b.Cleanup(srv.Close)
	return srv
}

// BenchmarkProxyOverhead compares POST /api/ai/openai/chat through the whole stack (JWT, rate
// limit, access log, validation, upstream call, normalization, pricing, recording) with the
// same client calling the in-process fake upstream directly, and with a do-nothing forwarder
// over the same net/http transport that carries the headers our contract requires
// ("forwarder-ratio": ours / the forwarder, target >= 0.75). "c1/added-p50" alternates single
// requests to the fake and through the stack and reports the p50 each and their difference
// (target <= 100 µs). The "recorded" rows queue every request into the real recorder writing
// to the embedded store; the others use a discarding recorder.
func BenchmarkProxyOverhead(b *testing.B) {
	up := fastUpstream(b)
	tokens := auth.NewTokens(secret, time.Hour)
	token, _ := tokens.Issue(auth.Caller{ID: "64b000000000000000000001", Email: "a@example.com", Roles: []string{"user"}})
	newProxy := func(rec ai.Recorder) *httptest.Server {
		svc := ai.New(ai.Options{
			Providers: map[string]ai.ProviderConfig{"openai": {APIKey: "sk-bench", BaseURL: up.URL + "/v1", DefaultModel: "gpt-4o-mini"}},
			Timeout:   30 * time.Second, Recorder: rec,
		})
		srv := httptest.NewServer(NewServer(stackOptions(), Deps{Tokens: tokens, AI: svc}))
		b.Cleanup(srv.Close)
		return srv
	}
	proxy := newProxy(discardRecorder{})
	us := usage.New(storetest.DB(b), usage.Options{})
	if err := us.EnsureIndexes(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = us.Close(context.Background()) })
	recorded := newProxy(us)
	direct := []byte(`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Say hello in one short sentence."}],"temperature":0.7,"max_completion_tokens":1000}`)
	ours := []byte(`{"messages":[{"role":"user","content":"Say hello in one short sentence."}]}`)
	// The floor of any net/http proxy on this machine: a handler that only forwards the body
	// and copies the answer back, carrying the headers the contract asks of every proxied call
	// (the client's bearer token in, the provider's key and JSON headers out, the request id
	// and the three rate-limit headers back), over the service's transport.
	forwarder := bareProxy(b, bareTransport, up.URL, true)

	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64, MaxIdleConns: 128}}
	toFake := requester(client, "POST", up.URL+"/v1/chat/completions", "", direct)
	toForwarder := requester(client, "POST", forwarder.URL+"/v1/chat/completions", token, direct)
	toProxy := requester(client, "POST", proxy.URL+"/api/ai/openai/chat", token, ours)
	toRecorded := requester(client, "POST", recorded.URL+"/api/ai/openai/chat", token, ours)
	b.Run("c32/ratio", func(b *testing.B) { interleavedRatio(b, 32, toFake, toProxy) })
	b.Run("c32/forwarder-ratio", func(b *testing.B) { interleavedRatio(b, 32, toForwarder, toProxy) })
	b.Run("c32/forwarder-ratio-recorded", func(b *testing.B) { interleavedRatio(b, 32, toForwarder, toRecorded) })
	b.Run("c1/added-p50", func(b *testing.B) { addedP50(b, toFake, toProxy) })
	b.Run("c1/added-p50-recorded", func(b *testing.B) { addedP50(b, toFake, toRecorded) })
	b.Run("c32/direct", func(b *testing.B) { drive(b, 32, up.URL+"/v1/chat/completions", "", direct) })
	b.Run("c32/proxied", func(b *testing.B) { drive(b, 32, proxy.URL+"/api/ai/openai/chat", token, ours) })
	b.Run("c1/direct", func(b *testing.B) { drive(b, 1, up.URL+"/v1/chat/completions", "", direct) })
	b.Run("c1/proxied", func(b *testing.B) { drive(b, 1, proxy.URL+"/api/ai/openai/chat", token, ours) })
	b.Run("c32/proxied-recorded", func(b *testing.B) { drive(b, 32, recorded.URL+"/api/ai/openai/chat", token, ours) })
}

// addedP50 alternates one request to base and one to subject from a single client, b.N pairs
// (at least 2,000), and reports each side's p50 and the difference: the latency subject adds.
func addedP50(b *testing.B, base, subject func() error) {
	n := max(b.N, 2000)
	lb, ls := make([]time.Duration, 0, n), make([]time.Duration, 0, n)
	for i := 0; i < n; i++ {
		for _, side := range []struct {
			fn  func() error
			lat *[]time.Duration
		}{{base, &lb}, {subject, &ls}} {
			t := time.Now()
			if err := side.fn(); err != nil {
				b.Fatal(err)
			}
			*side.lat = append(*side.lat, time.Since(t))
		}
	}
	p50 := func(d []time.Duration) float64 {
		sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
		return float64(d[len(d)/2].Nanoseconds()) / 1000
	}
	pb, ps := p50(lb), p50(ls)
	b.ReportMetric(pb, "base-p50-µs")
	b.ReportMetric(ps, "p50-µs")
	b.ReportMetric(ps-pb, "added-p50-µs")
}
