package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/acme/app/internal/auth"
	"github.com/acme/app/internal/ratelimit"
	"github.com/acme/app/internal/store/storetest"
)

// benchParallel drives GET url from parallel keep-alive clients over loopback.
func benchParallel(b *testing.B, url, token string) {
	b.Helper()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	b.SetParallelism(4)
	b.ResetTimer()
	get := requester(client, "GET", url, token, nil)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := get(); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// stackOptions is the production middleware with JSON access logs (to nowhere) and a limit
// high enough never to refuse, so its cost is counted.
func stackOptions() Options {
	return Options{
		Logger:    slog.New(slog.NewJSONHandler(io.Discard, nil)),
		RateLimit: 1 << 30, RateWindow: time.Minute, Limiter: ratelimit.NewMemory(0), Version: "1.0.0",
	}
}

// BenchmarkHealth compares GET /api/health through the whole middleware stack with a bare
// net/http handler answering the same JSON (target: stack >= 75% of bare requests/s).
func BenchmarkHealth(b *testing.B) {
	bare := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := json.Marshal(Health{Status: "ok", Timestamp: time.Now().UTC().Format(time.RFC3339Nano), Service: "backend-api", Version: "1.0.0"})
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		_, _ = w.Write(body)
	}))
	defer bare.Close()
	stack := httptest.NewServer(NewServer(stackOptions(), Deps{DB: pingFunc(func(context.Context) error { return nil })}))
	defer stack.Close()
	b.Run("bare", func(b *testing.B) { benchParallel(b, bare.URL+"/api/health", "") })
	b.Run("stack", func(b *testing.B) { benchParallel(b, stack.URL+"/api/health", "") })
}

// BenchmarkLogin compares the p50 of POST /api/auth/login (bcrypt cost 10, embedded store)
// with one bcrypt.CompareHashAndPassword at the same cost (target: within 15%).
func BenchmarkLogin(b *testing.B) {
	const cost = 10
	hash, _ := bcrypt.GenerateFromPassword([]byte("secret12"), cost)
	b.Run("bcrypt", func(b *testing.B) {
		p50 := measureP50(b, func() {
			_ = bcrypt.CompareHashAndPassword(hash, []byte("secret12"))
		})
		b.ReportMetric(p50, "p50-ms")
	})
	tokens := auth.NewTokens(secret, time.Hour)
	svc, err := auth.New(context.Background(), storetest.DB(b), tokens, cost)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := svc.Register(context.Background(), auth.RegisterInput{Email: "bench@example.com", Password: "secret12", Name: "B"}); err != nil {
		b.Fatal(err)
	}
	opts := stackOptions()
	srv := httptest.NewServer(NewServer(opts, Deps{Tokens: tokens, Auth: svc}))
	defer srv.Close()
	client := srv.Client()
	b.Run("http", func(b *testing.B) {
		p50 := measureP50(b, func() {
			resp, err := client.Post(srv.URL+"/api/auth/login", "application/json",
				strings.NewReader(`{"email":"bench@example.com","password":"secret12"}`))
			if err != nil || resp.StatusCode != 200 {
				b.Fatalf("login: %v %v", resp, err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		})
		b.ReportMetric(p50, "p50-ms")
	})
}

func measureP50(b *testing.B, fn func()) float64 {
	b.Helper()
	d := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		fn()
		d = append(d, time.Since(start))
	}
	b.StopTimer()
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	return float64(d[len(d)/2].Microseconds()) / 1000
}

// throughput runs fn from `clients` goroutines and returns calls per second over a window of
// d in steady state: the window opens after a warm-up of d/10 (the clients' first calls all
// start at once and take longer) and calls still in flight when it closes are not counted.
// Either edge, counted, would favour one side: the slower one (longer calls) at the close,
// the faster one at the start. It also returns the process's CPU time per call over the whole
// round (0 where processCPU cannot tell).
func throughput(clients int, fn func() error, d time.Duration) (float64, time.Duration, error) {
	var n, all atomic.Int64
	cpu0 := processCPU()
	begin := time.Now().Add(d / 10)
	stop := begin.Add(d)
	errc := make(chan error, clients)
	for g := 0; g < clients; g++ {
		go func() {
			for time.Now().Before(stop) {
				if err := fn(); err != nil {
					errc <- err
					return
				}
				all.Add(1)
				if now := time.Now(); now.Before(stop) && !now.Before(begin) {
					n.Add(1)
				}
			}
			errc <- nil
		}()
	}
	for g := 0; g < clients; g++ {
		if err := <-errc; err != nil {
			return 0, 0, err
		}
	}
	return float64(n.Load()) / d.Seconds(), (processCPU() - cpu0) / time.Duration(max(all.Load(), 1)), nil
}

// ratioRounds is the number of alternating rounds per benchmark iteration: 20 pairs of 100 ms
// keep the spread of a ratio near ±0.01 on this shared machine.
const ratioRounds = 20

// ratioWindow is the length of one round.
const ratioWindow = 100 * time.Millisecond

// interleavedRatio measures base and subject from `clients` goroutines in alternating 100 ms
// rounds, so that load from elsewhere on a shared machine hits both alike, and reports
// subject/base requests per second ("ratio"). Where the process's CPU time can be read, it
// also reports each side's CPU per call and their ratio ("cpu-ratio": the throughput ratio of
// a machine the two sides had to themselves), which moves less with the machine's load.
func interleavedRatio(b *testing.B, clients int, base, subject func() error) {
	b.Helper()
	var sumBase, sumSubject float64
	var cpuBase, cpuSubject time.Duration
	for i := 0; i < b.N; i++ {
		for r := 0; r < ratioRounds; r++ {
			x, cx, err := throughput(clients, base, ratioWindow)
			if err != nil {
				b.Fatal(err)
			}
			y, cy, err := throughput(clients, subject, ratioWindow)
			if err != nil {
				b.Fatal(err)
			}
			sumBase += x
			sumSubject += y
			cpuBase += cx
			cpuSubject += cy
		}
	}
	rounds := float64(ratioRounds * b.N)
	b.ReportMetric(sumBase/rounds, "base-req/s")
	b.ReportMetric(sumSubject/rounds, "req/s")
	b.ReportMetric(sumSubject/sumBase, "ratio")
	if cpuBase > 0 && cpuSubject > 0 {
		b.ReportMetric(float64(cpuBase.Microseconds())/rounds, "base-cpu-µs/op")
		b.ReportMetric(float64(cpuSubject.Microseconds())/rounds, "cpu-µs/op")
		b.ReportMetric(float64(cpuBase)/float64(cpuSubject), "cpu-ratio")
	}
}

// requester returns a function sending one request (body may be nil) and expecting 200.
func requester(client *http.Client, method, url, token string, body []byte) func() error {
	return func() error {
		var rd io.Reader
		if body != nil {
			rd = bytes.NewReader(body)
		}
		req, _ := http.NewRequest(method, url, rd)
		if body != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			return fmt.Errorf("status %d", resp.StatusCode)
		}
		return nil
	}
}

// BenchmarkRatio reports, interleaved: health through the stack / a bare handler (target
// >= 0.75) and a protected route / health (target >= 0.80).
func BenchmarkRatio(b *testing.B) {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	bare := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := json.Marshal(Health{Status: "ok", Timestamp: time.Now().UTC().Format(time.RFC3339Nano), Service: "backend-api", Version: "1.0.0"})
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		_, _ = w.Write(body)
	}))
	defer bare.Close()
	tokens := auth.NewTokens(secret, time.Hour)
	token, _ := tokens.Issue(auth.Caller{ID: "64b000000000000000000001", Email: "a@example.com", Roles: []string{"user"}})
	opts := stackOptions()
	rl := &rateLimiter{limiter: opts.Limiter, log: opts.Logger}
	mux := http.NewServeMux()
	db := pingFunc(func(context.Context) error { return nil })
	mux.Handle("GET /api/health", handleHealth(db, nil, "1.0.0"))
	mux.Handle("GET /api/protected", requireAuth(&authenticator{tokens: tokens}, false, handleHealth(db, nil, "1.0.0")))
	stack := httptest.NewServer(observe(opts.Logger, true, 1<<20, nil, nil, route(mux, rl.limit("", opts.RateLimit, opts.RateWindow)(dispatch(mux)))))
	defer stack.Close()
	b.Run("health-vs-bare", func(b *testing.B) {
		interleavedRatio(b, 4, requester(client, "GET", bare.URL+"/api/health", "", nil), requester(client, "GET", stack.URL+"/api/health", "", nil))
	})
	b.Run("protected-vs-health", func(b *testing.B) {
		interleavedRatio(b, 4, requester(client, "GET", stack.URL+"/api/health", "", nil), requester(client, "GET", stack.URL+"/api/protected", token, nil))
	})
}
