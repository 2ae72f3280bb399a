package httpapi

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo"

	"github.com/acme/app/internal/ai"
	"github.com/acme/app/internal/ai/aitest"
	"github.com/acme/app/internal/apperr"
	"github.com/acme/app/internal/auth"
	"github.com/acme/app/internal/metrics"
	"github.com/acme/app/internal/store/storetest"
	"github.com/acme/app/internal/usage"
)

var aiPaths = map[string]string{"openai": "/api/ai/openai/chat", "anthropic": "/api/ai/anthropic/messages", "gemini": "/api/ai/gemini/generate"}

// syncBuffer is a log sink safe for the server's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// liveAI is the whole stack on a real listener, with one fake provider, the real recorder on
// the embedded store and the server log captured.
type liveAI struct {
	url, token, key string
	fake            *aitest.Server
	db              *mongo.Database
	log             *syncBuffer
	metrics         *metrics.Metrics
	srv             *httptest.Server
	usage           *usage.Service
}

func newLiveAI(t *testing.T, provider string, script ...aitest.Responder) *liveAI {
	t.Helper()
	lv := &liveAI{fake: aitest.New(t, provider, script...), db: storetest.DB(t), log: &syncBuffer{}, key: "sk-live-SECRET-" + provider,
		metrics: metrics.New()}
	logger := slog.New(slog.NewJSONHandler(lv.log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	us := usage.New(lv.db, usage.Options{Logger: logger,
		Recorder: usage.RecorderOptions{FlushInterval: time.Millisecond, Observer: lv.metrics}})
	t.Cleanup(func() { _ = us.Close(context.Background()) })
	svc := ai.New(ai.Options{Providers: map[string]ai.ProviderConfig{provider: {APIKey: lv.key, BaseURL: lv.fake.BaseURL(), DefaultModel: "gpt-4o-mini"}},
		Timeout: 5 * time.Second, Recorder: us, Observer: lv.metrics, Logger: logger, RetryBase: time.Millisecond, RetryCap: 20 * time.Millisecond})
	tokens := auth.NewTokens(secret, time.Hour)
	srv := httptest.NewServer(NewServer(Options{Logger: logger, RateLimit: 1 << 20, RateWindow: time.Minute, Metrics: lv.metrics},
		Deps{Tokens: tokens, AI: svc, Usage: us}))
	t.Cleanup(srv.Close)
	lv.url, lv.srv, lv.usage = srv.URL, srv, us
	lv.token, _ = tokens.Issue(auth.Caller{ID: "64b000000000000000000001", Email: "a@example.com", Roles: []string{"user"}})
	return lv
}

func (lv *liveAI) post(t *testing.T, ctx context.Context, provider, body string) *http.Response {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, "POST", lv.url+aiPaths[provider], strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+lv.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// records waits until n records are in ai_requests and returns them.
func (lv *liveAI) records(t *testing.T, n int) []bson.M {
	t.Helper()
	var out []bson.M
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		cur, err := lv.db.Collection("ai_requests").Find(context.Background(), bson.D{})
		if err != nil {
			t.Fatal(err)
		}
		out = nil
		if err := cur.All(context.Background(), &out); err != nil {
			t.Fatal(err)
		}
		if len(out) >= n {
			break
		}
	}
	return out
}

// settle waits until the server has finished every request and the recorder has written
// every record, then closes both.
func (lv *liveAI) settle(t *testing.T) {
	t.Helper()
	lv.srv.Close() // returns once every handler has returned
	if err := lv.usage.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
}

type sse struct{ name, data string }

// readEvents reads an event stream to its end; comments are returned as events named ":".
func readEvents(t *testing.T, r io.Reader, each func(sse)) []sse {
	t.Helper()
	var out []sse
	var cur sse
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if cur.name != "" || cur.data != "" {
				out = append(out, cur)
				if each != nil {
					each(cur)
				}
			}
			cur = sse{}
		case strings.HasPrefix(line, ":"):
			out = append(out, sse{name: ":", data: line})
		case strings.HasPrefix(line, "event: "):
			cur.name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			cur.data = strings.TrimPrefix(line, "data: ")
		}
	}
	return out
}

// Ensure a streamed call answers delta events that join to the done event's text, done being
// the non-streamed answer's shape with the same usage and cost, X-Request-Id its requestId,
// and the call recorded once.
func TestAIStream_Events(t *testing.T) {
	t.Parallel()
	for _, provider := range ai.Providers() {
		t.Run(provider, func(t *testing.T) {
			t.Parallel()
			lv := newLiveAI(t, provider, aitest.Stream(aitest.StreamOptions{}), aitest.OK(""))
			resp := lv.post(t, context.Background(), provider, `{"messages":[{"role":"user","content":"hi"}],"stream":true}`)
			defer resp.Body.Close()
			if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" || resp.Header.Get("Cache-Control") != "no-cache" {
				t.Fatalf("status %d, headers %v", resp.StatusCode, resp.Header)
			}
			events := readEvents(t, resp.Body, nil)
			var text strings.Builder
			for _, e := range events[:len(events)-1] {
				var d struct{ Text string }
				if e.name != "delta" || json.Unmarshal([]byte(e.data), &d) != nil {
					t.Fatalf("event %+v", e)
				}
				text.WriteString(d.Text)
			}
			last := events[len(events)-1]
			var done, plain map[string]any
			if last.name != "done" || json.Unmarshal([]byte(last.data), &done) != nil {
				t.Fatalf("last event %+v", last)
			}
			if done["text"] != text.String() || done["requestId"] != resp.Header.Get("X-Request-Id") || len(events) != 5 {
				t.Errorf("done %v, deltas %q, X-Request-Id %q", done, text.String(), resp.Header.Get("X-Request-Id"))
			}
			resp2 := lv.post(t, context.Background(), provider, `{"messages":[{"role":"user","content":"hi"}]}`)
			defer resp2.Body.Close()
			if err := json.NewDecoder(resp2.Body).Decode(&plain); err != nil {
				t.Fatal(err)
			}
			for _, k := range []string{"usage", "cost", "model", "provider"} {
				if b1, _ := json.Marshal(done[k]); string(b1) != func() string { b2, _ := json.Marshal(plain[k]); return string(b2) }() {
					t.Errorf("%s: streamed %v, plain %v", k, done[k], plain[k])
				}
			}
			if len(done) != len(plain) {
				t.Errorf("done has %d fields, the plain answer %d", len(done), len(plain))
			}
			if recs := lv.records(t, 2); len(recs) != 2 {
				t.Errorf("%d records, want 2", len(recs))
			}
		})
	}
}

// Ensure failures: before the first piece an ordinary JSON error; after it an error event with
// the envelope; a stream that is not a boolean is a validation message.
func TestAIStream_Failures(t *testing.T) {
	t.Parallel()
	t.Run("BeforeFirstByteIsJSON", func(t *testing.T) {
		t.Parallel()
		lv := newLiveAI(t, "openai", aitest.Error("openai", 500, "server_error", "boom"))
		resp := lv.post(t, context.Background(), "openai", `{"messages":[{"role":"user","content":"hi"}],"stream":true}`)
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 502 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") ||
			!strings.Contains(string(body), `"statusCode":502`) {
			t.Fatalf("%d %s %s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
		}
	})
	t.Run("MidStreamIsErrorEvent", func(t *testing.T) {
		t.Parallel()
		lv := newLiveAI(t, "anthropic", aitest.Stream(aitest.StreamOptions{FailAfter: 2}))
		resp := lv.post(t, context.Background(), "anthropic", `{"messages":[{"role":"user","content":"hi"}],"stream":true}`)
		defer resp.Body.Close()
		events := readEvents(t, resp.Body, nil)
		if len(events) != 3 || events[0].name != "delta" || events[2].name != "error" ||
			!strings.Contains(events[2].data, `"statusCode":502`) || !strings.Contains(events[2].data, `"error":"Bad Gateway"`) {
			t.Fatalf("events %+v", events)
		}
		if recs := lv.records(t, 1); len(recs) != 1 || recs[0]["status"] != usage.StatusError {
			t.Errorf("records %v", recs)
		}
	})
	t.Run("StreamNotBoolean", func(t *testing.T) {
		t.Parallel()
		lv := newLiveAI(t, "openai")
		resp := lv.post(t, context.Background(), "openai", `{"messages":[{"role":"user","content":"hi"}],"stream":"yes"}`)
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 400 || !strings.Contains(string(body), `"message":["stream must be a boolean value"]`) || len(lv.fake.Calls()) != 0 {
			t.Fatalf("%d %s", resp.StatusCode, body)
		}
	})
}

// Ensure a client that leaves mid-stream closes the provider's connection within a second and
// the call is recorded once, as canceled, with the prompt tokens the provider reported.
func TestAIStream_ClientLeaves(t *testing.T) {
	t.Parallel()
	closed := make(chan bool, 1)
	lv := newLiveAI(t, "anthropic", aitest.Stream(aitest.StreamOptions{Pieces: strings.Fields("a b c d e f g h i j"),
		Gap: 100 * time.Millisecond, Done: func(left bool, _ time.Time) { closed <- left }}))
	ctx, cancel := context.WithCancel(context.Background())
	resp := lv.post(t, ctx, "anthropic", `{"messages":[{"role":"user","content":"hi"}],"stream":true}`)
	br := bufio.NewReader(resp.Body)
	if line, err := br.ReadString('\n'); err != nil || line != "event: delta\n" {
		t.Fatalf("first line %q, %v", line, err)
	}
	cancel()
	resp.Body.Close()
	select {
	case left := <-closed:
		if !left {
			t.Fatal("the fake finished its stream")
		}
	case <-time.After(10 * time.Second): // generous: a loaded CI machine
		t.Fatal("the fake did not see its connection closed within 10 s")
	}
	lv.settle(t) // every record the call makes is written now
	// "in" is the stored name of usage.Record.PromptTokens.
	if recs := lv.records(t, 1); len(recs) != 1 || recs[0]["status"] != usage.StatusCanceled || recs[0]["in"] != int64(11) {
		t.Fatalf("records %v, want one canceled with 11 prompt tokens", recs)
	}
}

// Ensure a client that stops reading cannot hold its stream: once a write waits past
// streamWriteTimeout the stream ends, the provider's connection is closed and the call is
// recorded. Not parallel: it changes streamWriteTimeout while no parallel test runs.
func TestAIStream_ClientStopsReading(t *testing.T) {
	defer func(d time.Duration) { streamWriteTimeout = d }(streamWriteTimeout)
	streamWriteTimeout = 300 * time.Millisecond
	piece := strings.Repeat("x", 16<<10)
	pieces := make([]string, 4000) // 64 MB: more than the sockets' buffers hold
	for i := range pieces {
		pieces[i] = piece
	}
	closed := make(chan bool, 1)
	lv := newLiveAI(t, "openai", aitest.Stream(aitest.StreamOptions{Pieces: pieces, Done: func(left bool, _ time.Time) { closed <- left }}))
	resp := lv.post(t, context.Background(), "openai", `{"messages":[{"role":"user","content":"hi"}],"stream":true}`)
	defer resp.Body.Close()
	if line, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil || line != "event: delta\n" {
		t.Fatalf("first line %q, %v", line, err)
	}
	// The client reads nothing more and keeps the connection open.
	select {
	case left := <-closed:
		if !left {
			t.Fatal("the fake finished its stream: the client's buffers took all of it")
		}
	case <-time.After(20 * time.Second): // generous: a loaded CI machine
		t.Fatal("the stream still waits on a client that stopped reading")
	}
	lv.settle(t)
	if recs := lv.records(t, 1); len(recs) != 1 || recs[0]["status"] == usage.StatusSuccess {
		t.Fatalf("records %v, want one that did not succeed", recs)
	}
}

// Ensure a provider that quotes the server's API key back in its refusal leaves the key in no
// log line, no answer and no record.
func TestAI_KeyEchoRedacted(t *testing.T) {
	t.Parallel()
	echo := map[string]func(key string) aitest.Responder{
		"openai": func(k string) aitest.Responder {
			return aitest.Error("openai", 401, "invalid_api_key", "Incorrect API key provided: "+k+". You can find your API key at https://platform.openai.com/account/api-keys.")
		},
		"anthropic": func(k string) aitest.Responder {
			return aitest.Error("anthropic", 401, "authentication_error", "invalid x-api-key: "+k)
		},
		"gemini": func(k string) aitest.Responder {
			return aitest.JSON(400, `{"error":{"code":400,"message":"API key not valid: `+k+`. Please pass a valid API key.","status":"INVALID_ARGUMENT","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"API_KEY_INVALID"}]}}`)
		},
	}
	for _, provider := range ai.Providers() {
		for _, stream := range []bool{false, true} {
			t.Run(provider+map[bool]string{false: "", true: "/stream"}[stream], func(t *testing.T) {
				t.Parallel()
				key := "sk-live-SECRET-" + provider
				lv := newLiveAI(t, provider, echo[provider](key))
				body := `{"messages":[{"role":"user","content":"hi"}]}`
				if stream {
					body = `{"messages":[{"role":"user","content":"hi"}],"stream":true}`
				}
				resp := lv.post(t, context.Background(), provider, body)
				answer, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 502 || strings.Contains(string(answer), key) {
					t.Fatalf("%d %s", resp.StatusCode, answer)
				}
				recs := lv.records(t, 1)
				rec, _ := json.Marshal(recs)
				if len(recs) != 1 || strings.Contains(string(rec), key) {
					t.Errorf("records %s", rec)
				}
				if log := lv.log.String(); strings.Contains(log, key) || !strings.Contains(log, "request failed") {
					t.Errorf("the server log carries the key (or nothing was logged):\n%s", log)
				}
			})
		}
	}
}

// Ensure a stream that has sent nothing for pingInterval sends a comment line. Not parallel:
// it changes pingInterval while no parallel test runs.
func TestAIStream_Ping(t *testing.T) {
	defer func(d time.Duration) { pingInterval = d }(pingInterval)
	pingInterval = 30 * time.Millisecond
	lv := newLiveAI(t, "openai", aitest.Stream(aitest.StreamOptions{GapAfterFirst: 300 * time.Millisecond}))
	resp := lv.post(t, context.Background(), "openai", `{"messages":[{"role":"user","content":"hi"}],"stream":true}`)
	defer resp.Body.Close()
	events := readEvents(t, resp.Body, nil)
	if len(events) < 3 || events[0].name != "delta" || events[1].name != ":" || events[1].data != ": ping" {
		t.Fatalf("events %+v, want a ping after the first delta", events)
	}
}

// refusingBudget refuses every call.
type refusingBudget struct{}

func (refusingBudget) Reserve(context.Context, string, float64) (ai.Reservation, error) {
	return nil, apperr.E(apperr.PaymentRequired, "monthly budget reached")
}

// Ensure a call the budget refuses is a 402 envelope, streamed or not, and reaches no provider.
func TestAI_BudgetRefusedIs402(t *testing.T) {
	t.Parallel()
	fake := aitest.New(t, "openai")
	svc := ai.New(ai.Options{Providers: map[string]ai.ProviderConfig{"openai": {APIKey: "k", BaseURL: fake.BaseURL(), DefaultModel: "gpt-4o-mini"}},
		Budget: refusingBudget{}})
	tokens := auth.NewTokens(secret, time.Hour)
	token, _ := tokens.Issue(auth.Caller{ID: "64b000000000000000000001", Email: "a@example.com", Roles: []string{"user"}})
	h := NewServer(Options{RateLimit: 1 << 20, RateWindow: time.Minute}, Deps{Tokens: tokens, AI: svc})
	for _, body := range []string{`{"messages":[{"role":"user","content":"hi"}]}`, `{"messages":[{"role":"user","content":"hi"}],"stream":true}`} {
		rec := do(h, "POST", "/api/ai/openai/chat", body, token)
		if rec.Code != 402 || rec.Body.String() != `{"statusCode":402,"message":"monthly budget reached","error":"Payment Required"}`+"\n" {
			t.Errorf("%s: %d %s", body, rec.Code, rec.Body)
		}
	}
	if n := len(fake.Calls()); n != 0 {
		t.Errorf("the provider got %d calls", n)
	}
}

// Ensure each piece reaches the client as it arrives: the provider holds back its second
// piece until the client has read the first delta (or 10 s have passed), so a server that
// buffered pieces would leave the provider waiting out the whole timeout.
func TestAIStream_FirstDeltaBeforeSecondIsSent(t *testing.T) {
	t.Parallel()
	hold, release, heldBack := aitest.HoldAfterFirst(10 * time.Second)
	lv := newLiveAI(t, "gemini", aitest.Stream(aitest.StreamOptions{Sent: hold}))
	resp := lv.post(t, context.Background(), "gemini", `{"messages":[{"role":"user","content":"hi"}],"stream":true}`)
	defer resp.Body.Close()
	readEvents(t, resp.Body, func(e sse) {
		if e.name == "delta" {
			release()
		}
	})
	if <-heldBack {
		t.Fatal("the client had no delta until the provider sent its second piece")
	}
}
