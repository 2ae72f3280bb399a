package httpapi

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/acme/app/internal/ai"
	"github.com/acme/app/internal/auth"
)

// streamBench sizes BenchmarkStreams: STREAM_BENCH="streams,chunks,interval" (default
// "1000,100,100ms").
func streamBench(b *testing.B) (streams, chunks int, interval time.Duration) {
	streams, chunks, interval = 1000, 100, 100*time.Millisecond
	if v := os.Getenv("STREAM_BENCH"); v != "" {
		parts := strings.Split(v, ",")
		if len(parts) != 3 {
			b.Fatalf("STREAM_BENCH=%q: want streams,chunks,interval", v)
		}
		var err error
		if streams, err = strconv.Atoi(parts[0]); err != nil {
			b.Fatal(err)
		}
		if chunks, err = strconv.Atoi(parts[1]); err != nil {
			b.Fatal(err)
		}
		if interval, err = time.ParseDuration(parts[2]); err != nil {
			b.Fatal(err)
		}
	}
	return streams, chunks, interval
}

// streamingUpstream is an OpenAI fake streaming chunks pieces, one per interval; each piece's
// text is the time it was written (Unix nanoseconds), so a client can tell how long it took to
// come through.
func streamingUpstream(b *testing.B, chunks int, interval time.Duration) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		rc := http.NewResponseController(w)
		t := time.NewTicker(interval)
		defer t.Stop()
		for i := 0; i < chunks; i++ {
			if i > 0 {
				select {
				case <-t.C:
				case <-r.Context().Done():
					return
				}
			}
			fmt.Fprintf(w, "data: {\"model\":\"gpt-4o-mini\",\"choices\":[{\"delta\":{\"content\":\"%d\"}}]}\n\n", time.Now().UnixNano())
			if rc.Flush() != nil {
				return
			}
		}
		fmt.Fprintf(w, "data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n"+
			"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":8,\"completion_tokens\":%d,\"total_tokens\":%d}}\n\ndata: [DONE]\n\n", chunks, chunks+8)
		_ = rc.Flush()
	}))
	b.Cleanup(srv.Close)
	return srv
}

// streamForwarder is a do-nothing streaming proxy over net/http: it posts the body upstream
// and copies the answer back, flushing after every read.
func streamForwarder(b *testing.B, rt http.RoundTripper, upstream string) *httptest.Server {
	client := &http.Client{Transport: rt}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		req, _ := http.NewRequestWithContext(r.Context(), "POST", upstream+"/v1/chat/completions", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer sk-bench")
		resp, err := client.Do(req)
		if err != nil {
			w.WriteHeader(http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		w.Header().Set("Content-Type", "text/event-stream")
		rc := http.NewResponseController(w)
		buf := make([]byte, 4096)
		for {
			n, err := resp.Body.Read(buf)
			if n > 0 {
				if _, werr := w.Write(buf[:n]); werr != nil || rc.Flush() != nil {
					return
				}
			}
			if err != nil {
				return
			}
		}
	}))
	b.Cleanup(srv.Close)
	return srv
}

var stampPattern = regexp.MustCompile(`"(\d{19})"`)

// streamRun is what runStreams measured.
type streamRun struct {
	delays         []time.Duration // per piece: arrival at the client − written by the fake
	complete, fail int
	peakRSS        int64 // bytes, the process's high-water mark over the run
	settle         time.Duration
	goroutines     [3]int // before, 2 s after the last stream (or when back to before), after closing idle pools
}

// runStreams opens n streams at once with body to url and reads each to its end.
func runStreams(b *testing.B, n int, url, token string, body []byte, closeIdle func()) streamRun {
	b.Helper()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: n, MaxIdleConns: n}}
	runtime.GC()
	var run streamRun
	run.goroutines[0] = runtime.NumGoroutine()
	_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) // resets VmHWM (Linux)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Go(func() {
			req, _ := http.NewRequest("POST", url, bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			if token != "" {
				req.Header.Set("Authorization", "Bearer "+token)
			}
			resp, err := client.Do(req)
			if err != nil {
				mu.Lock()
				run.fail++
				mu.Unlock()
				return
			}
			defer resp.Body.Close()
			var mine []time.Duration
			done := false
			sc := bufio.NewScanner(resp.Body)
			for sc.Scan() {
				line := sc.Bytes()
				if m := stampPattern.FindSubmatch(line); m != nil {
					ns, _ := strconv.ParseInt(string(m[1]), 10, 64)
					mine = append(mine, time.Since(time.Unix(0, ns)))
				}
				done = done || bytes.HasPrefix(line, []byte("event: done")) || bytes.Equal(line, []byte("data: [DONE]"))
			}
			mu.Lock()
			run.delays = append(run.delays, mine...)
			if done && resp.StatusCode == 200 {
				run.complete++
			} else {
				run.fail++
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	end := time.Now()
	client.CloseIdleConnections() // the load generator's side
	for run.goroutines[1] = runtime.NumGoroutine(); run.goroutines[1] > run.goroutines[0] && time.Since(end) < 2*time.Second; run.goroutines[1] = runtime.NumGoroutine() {
		time.Sleep(10 * time.Millisecond)
	}
	run.settle = time.Since(end)
	closeIdle()
	time.Sleep(100 * time.Millisecond)
	run.goroutines[2] = runtime.NumGoroutine()
	if status, err := os.ReadFile("/proc/self/status"); err == nil {
		for _, l := range strings.Split(string(status), "\n") {
			if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmHWM:" {
				kb, _ := strconv.ParseInt(f[1], 10, 64)
				run.peakRSS = kb << 10
			}
		}
	}
	return run
}

func pct(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	return d[min(len(d)-1, int(float64(len(d))*p))]
}

// BenchmarkStreams runs 1,000 concurrent streams of 100 pieces, one per 100 ms, through a
// do-nothing net/http forwarder and then through POST /api/ai/openai/chat with "stream": true
// (the whole stack, a discarding recorder), in the same run, and reports for each the p50 and
// p99 delay a piece gains between the fake writing it and the client reading it, the streams
// completed, the process's peak RSS (fake, proxy and clients together) and the goroutines 2 s
// after the last stream against the count before it (what is left then is the keep-alive
// pool to the provider: 3 goroutines per idle connection, until IdleConnTimeout; with the
// pool closed, the count before). "p99-ratio" is ours / the forwarder's
// (target <= 2). Run it alone: -bench Streams -benchtime 1x.
func BenchmarkStreams(b *testing.B) {
	streams, chunks, interval := streamBench(b)
	up := streamingUpstream(b, chunks, interval)
	tokens := auth.NewTokens(secret, time.Hour)
	token, _ := tokens.Issue(auth.Caller{ID: "64b000000000000000000001", Email: "a@example.com", Roles: []string{"user"}})
	rt := ai.NewTransport(256)
	svc := ai.New(ai.Options{
		Providers: map[string]ai.ProviderConfig{"openai": {APIKey: "sk-bench", BaseURL: up.URL + "/v1", DefaultModel: "gpt-4o-mini"}},
		Timeout:   30 * time.Second, Recorder: discardRecorder{}, Transport: rt,
	})
	proxy := httptest.NewServer(NewServer(stackOptions(), Deps{Tokens: tokens, AI: svc}))
	b.Cleanup(proxy.Close)
	fwdRT := ai.NewTransport(256)
	fwd := streamForwarder(b, fwdRT, up.URL)
	direct := []byte(`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Say hello"}],"stream":true}`)
	ours := []byte(`{"messages":[{"role":"user","content":"Say hello"}],"stream":true}`)
	for i := 0; i < b.N; i++ {
		f := runStreams(b, streams, fwd.URL+"/v1/chat/completions", "", direct, fwdRT.CloseIdleConnections)
		o := runStreams(b, streams, proxy.URL+"/api/ai/openai/chat", token, ours, rt.CloseIdleConnections)
		for _, r := range []struct {
			name string
			run  streamRun
		}{{"forwarder", f}, {"ours", o}} {
			b.Logf("%s: %d/%d streams complete (%d failed), %d pieces, delay p50 %v p99 %v, peak RSS %d MB, goroutines %d before, %d after %v, %d with the provider pool closed",
				r.name, r.run.complete, streams, r.run.fail, len(r.run.delays), pct(r.run.delays, 0.5), pct(r.run.delays, 0.99),
				r.run.peakRSS>>20, r.run.goroutines[0], r.run.goroutines[1], r.run.settle.Round(time.Millisecond), r.run.goroutines[2])
		}
		b.ReportMetric(float64(o.complete), "streams-complete")
		b.ReportMetric(float64(pct(f.delays, 0.99).Microseconds()), "fwd-p99-µs")
		b.ReportMetric(float64(pct(o.delays, 0.99).Microseconds()), "p99-µs")
		b.ReportMetric(float64(pct(o.delays, 0.99))/float64(max(pct(f.delays, 0.99), 1)), "p99-ratio")
		b.ReportMetric(float64(o.peakRSS>>20), "peak-RSS-MB")
		b.ReportMetric(float64(o.goroutines[1]-o.goroutines[0]), "goroutines-left-2s")
		b.ReportMetric(float64(o.goroutines[2]-o.goroutines[0]), "goroutines-left-pool-closed")
	}
}
