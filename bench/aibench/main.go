// Command aibench holds the parts bench/ai_compare.sh measures app serve with: a fake OpenAI
// upstream, a do-nothing forwarder in front of it, and a client of many concurrent streams.
//
//	aibench fake PORT                  a chat completion, or with "stream": true PIECES pieces GAP apart;
//	                                   asked with "tool_choice":"required", a tool call of the same size
//	aibench forward PORT UPSTREAM      httputil.ReverseProxy to UPSTREAM, streaming as it reads
//	aibench streams URL N BODY [AUTH]  N concurrent streamed POSTs of BODY; prints one line of figures
//	aibench bare PORT                  GET /api/health answered by a bare net/http handler
//	aibench floor PORT UPSTREAM DIR    the forwarder plus what app cannot skip: the answer's usage
//	                                   decoded and one record per call to the usage recorder on
//	                                   the embedded store under DIR
//
// PIECES (default 100) and GAP (default 20ms) shape the fake's streams.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/acme/app/internal/store"
	"github.com/acme/app/internal/usage"
)

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: aibench fake PORT | forward PORT UPSTREAM | streams URL N BODY [AUTH]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "fake":
		err = fake(os.Args[2])
	case "forward":
		err = forward(os.Args[2], os.Args[3])
	case "bare":
		err = bare(os.Args[2])
	case "floor":
		err = floor(os.Args[2], os.Args[3], os.Args[4])
	case "streams":
		n, _ := strconv.Atoi(os.Args[3])
		auth := ""
		if len(os.Args) > 5 {
			auth = os.Args[5]
		}
		err = streams(os.Args[2], n, os.Args[4], auth)
	default:
		err = fmt.Errorf("unknown part %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "aibench:", err)
		os.Exit(1)
	}
}

const answer = `{"id":"chatcmpl-fake123","object":"chat.completion","created":1763800000,"model":"gpt-4o-mini-2024-07-18","choices":[{"index":0,"message":{"role":"assistant","content":"Hello! How can I help you today?","refusal":null},"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":12,"completion_tokens":9,"total_tokens":21,"prompt_tokens_details":{"cached_tokens":0,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0}},"service_tier":"default"}`

// toolAnswer is answer's tool-call twin: the same usage, a call in place of the text, and a
// text of the same length in plainTwin, so that the two answers are the same size.
const (
	toolAnswer = `{"id":"chatcmpl-fake123","object":"chat.completion","created":1763800000,"model":"gpt-4o-mini-2024-07-18","choices":[{"index":0,"message":{"role":"assistant","content":null,"refusal":null,"tool_calls":[{"id":"call_abcdefghijklmnopqrstuvwx","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\",\"days\":3}"}}]},"logprobs":null,"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":12,"completion_tokens":9,"total_tokens":21,"prompt_tokens_details":{"cached_tokens":0,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0}},"service_tier":"default"}`
	plainTwin  = `{"id":"chatcmpl-fake123","object":"chat.completion","created":1763800000,"model":"gpt-4o-mini-2024-07-18","choices":[{"index":0,"message":{"role":"assistant","content":"Hello! How can I help you today? The weather in Paris for three days is mild, sunny and dry. Bring a light jacket for the evenings and sunglasses for midday, to","refusal":null},"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":12,"completion_tokens":9,"total_tokens":21,"prompt_tokens_details":{"cached_tokens":0,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0}},"service_tier":"default"}`
)

func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

// fake answers OpenAI's chat completions: one fixed answer, or a stream in OpenAI's format.
func fake(port string) error {
	pieces := envInt("PIECES", 100)
	gap, err := time.ParseDuration(os.Getenv("GAP"))
	if err != nil {
		gap = 20 * time.Millisecond
	}
	http.HandleFunc("POST /v1/chat/completions", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		tools := bytes.Contains(body, []byte(`"tools":`))
		call := bytes.Contains(body, []byte(`"tool_choice":"required"`))
		if !bytes.Contains(body, []byte(`"stream":true`)) {
			w.Header().Set("Content-Type", "application/json")
			switch {
			case call:
				_, _ = w.Write([]byte(toolAnswer))
			case tools:
				_, _ = w.Write([]byte(plainTwin))
			default:
				_, _ = w.Write([]byte(answer))
			}
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fl := w.(http.Flusher)
		chunk := func(s string) {
			fmt.Fprintf(w, "data: %s\n\n", s)
			fl.Flush()
		}
		finish := "stop"
		if call {
			// A tool call streamed as OpenAI does: its id and name, then argument fragments of
			// the size of the text pieces.
			finish = "tool_calls"
			chunk(`{"id":"c","object":"chat.completion.chunk","created":1763800000,"model":"gpt-4o-mini-2024-07-18","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_abc","type":"function","function":{"name":"get_weather","arguments":""}}]},"finish_reason":null}]}`)
		}
		for i := range pieces {
			if i > 0 {
				select {
				case <-time.After(gap):
				case <-r.Context().Done():
					return
				}
			}
			if call {
				chunk(`{"id":"c","object":"chat.completion.chunk","created":1763800000,"model":"gpt-4o-mini-2024-07-18","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"word "}}]},"finish_reason":null}]}`)
				continue
			}
			chunk(`{"id":"c","object":"chat.completion.chunk","created":1763800000,"model":"gpt-4o-mini-2024-07-18","choices":[{"index":0,"delta":{"content":"word "},"finish_reason":null}]}`)
		}
		chunk(`{"id":"c","object":"chat.completion.chunk","created":1763800000,"model":"gpt-4o-mini-2024-07-18","choices":[{"index":0,"delta":{},"finish_reason":"` + finish + `"}]}`)
		chunk(fmt.Sprintf(`{"id":"c","object":"chat.completion.chunk","created":1763800000,"model":"gpt-4o-mini-2024-07-18","choices":[],"usage":{"prompt_tokens":12,"completion_tokens":%d,"total_tokens":%d}}`, pieces, pieces+12))
		chunk("[DONE]")
	})
	return http.ListenAndServe("127.0.0.1:"+port, nil)
}

// forward is the floor a proxy is measured against: the standard library's reverse proxy,
// which does nothing but pass requests and answers on.
func forward(port, upstream string) error {
	u, err := url.Parse(upstream)
	if err != nil {
		return err
	}
	p := httputil.NewSingleHostReverseProxy(u)
	p.FlushInterval = -1
	p.Transport = &http.Transport{MaxIdleConnsPerHost: 256, ForceAttemptHTTP2: false}
	return http.ListenAndServe("127.0.0.1:"+port, p)
}

// bare answers GET /api/health as app does, from a bare handler: the floor of a JSON route.
func bare(port string) error {
	http.HandleFunc("GET /api/health", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		_ = json.NewEncoder(w).Encode(map[string]any{"status": "ok", "timestamp": time.Now().UTC(),
			"service": "backend-api", "version": "0.1.0-dev", "checks": map[string]any{"database": "ok"}})
	})
	return http.ListenAndServe("127.0.0.1:"+port, nil)
}

// floor forwards like forward, decodes the answer's usage and hands one record per call to
// the real usage recorder on an embedded store: the work an AI proxy that records usage
// cannot leave out.
func floor(port, upstream, dir string) error {
	ctx := context.Background()
	st, err := store.Open(ctx, store.Options{DataDir: dir})
	if err != nil {
		return err
	}
	defer st.Close(ctx)
	us := usage.New(st.DB("floor"), usage.Options{})
	if err := us.EnsureIndexes(ctx); err != nil {
		return err
	}
	defer us.Close(ctx)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}}
	http.HandleFunc("POST /v1/chat/completions", func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		req, _ := http.NewRequestWithContext(r.Context(), "POST", upstream+"/v1/chat/completions", r.Body)
		req.Header = r.Header.Clone()
		resp, err := client.Do(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		var answer struct {
			Model string `json:"model"`
			Usage struct {
				Prompt     int64 `json:"prompt_tokens"`
				Completion int64 `json:"completion_tokens"`
			} `json:"usage"`
		}
		_ = json.Unmarshal(body, &answer)
		_ = us.Record(r.Context(), usage.Record{RequestID: uuid.Must(uuid.NewV7()).String(), UserID: "floor", Provider: "openai",
			Model: answer.Model, Status: usage.StatusSuccess, UpstreamStatus: resp.StatusCode,
			PromptTokens: answer.Usage.Prompt, CompletionTokens: answer.Usage.Completion,
			TotalTokens: answer.Usage.Prompt + answer.Usage.Completion, Attempts: 1,
			LatencyMs: time.Since(start).Milliseconds(), CreatedAt: start.UTC()})
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(resp.StatusCode)
		_, _ = w.Write(body)
	})
	return http.ListenAndServe("127.0.0.1:"+port, nil)
}

// streams opens n streamed calls at once and prints how many completed, the time to the first
// piece (p50, p99), the longest gap between two pieces (p99 over the streams) and the
// wall time: "ok=N first_p50_ms=… first_p99_ms=… gap_p99_ms=… wall_s=…".
func streams(target string, n int, body, auth string) error {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: n, MaxConnsPerHost: 0}, Timeout: 5 * time.Minute}
	type result struct {
		ok         bool
		first, gap time.Duration
		err        string
	}
	results := make([]result, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			req, _ := http.NewRequest("POST", target, strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			if auth != "" {
				req.Header.Set("Authorization", auth)
			}
			t0 := time.Now()
			resp, err := client.Do(req)
			if err != nil {
				results[i].err = err.Error()
				return
			}
			defer resp.Body.Close()
			if resp.StatusCode != 200 {
				b, _ := io.ReadAll(io.LimitReader(resp.Body, 300))
				results[i].err = fmt.Sprintf("%d %s", resp.StatusCode, b)
				return
			}
			sc := bufio.NewScanner(resp.Body)
			last := time.Time{}
			var r result
			for sc.Scan() {
				line := sc.Text()
				if !strings.HasPrefix(line, "data:") {
					if line == "event: done" {
						r.ok = true
					}
					continue
				}
				now := time.Now()
				if last.IsZero() {
					r.first = now.Sub(t0)
				} else if g := now.Sub(last); g > r.gap {
					r.gap = g
				}
				last = now
				if strings.TrimSpace(line[5:]) == "[DONE]" {
					r.ok = true
				}
			}
			if sc.Err() != nil {
				r.ok, r.err = false, sc.Err().Error()
			}
			if !r.ok && r.err == "" {
				r.err = "the stream ended without its last event"
			}
			results[i] = r
		}()
	}
	t0 := time.Now()
	close(start)
	wg.Wait()
	wall := time.Since(t0)
	var firsts, gaps []time.Duration
	ok := 0
	var firstErr string
	for _, r := range results {
		if r.ok {
			ok++
			firsts = append(firsts, r.first)
			gaps = append(gaps, r.gap)
		} else if firstErr == "" {
			firstErr = r.err
		}
	}
	pct := func(xs []time.Duration, p float64) float64 {
		if len(xs) == 0 {
			return 0
		}
		slices.Sort(xs)
		return float64(xs[min(len(xs)-1, int(p*float64(len(xs))))].Microseconds()) / 1000
	}
	fmt.Printf("ok=%d first_p50_ms=%.1f first_p99_ms=%.1f gap_p99_ms=%.1f wall_s=%.2f\n",
		ok, pct(firsts, 0.5), pct(firsts, 0.99), pct(gaps, 0.99), wall.Seconds())
	if firstErr != "" {
		fmt.Fprintf(os.Stderr, "aibench: %d of %d streams failed; first: %s\n", n-ok, n, firstErr)
	}
	return nil
}
