package ai_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/acme/app/internal/ai"
	"github.com/acme/app/internal/ai/aitest"
	"github.com/acme/app/internal/apperr"
	"github.com/acme/app/internal/usage"
)

var models = map[string]string{"openai": "gpt-4o-mini", "anthropic": "claude-haiku-4-5", "gemini": "gemini-2.5-flash-lite"}

// collect returns an onDelta that keeps the pieces.
func collect() (*[]string, func(ai.Delta) error) {
	var mu sync.Mutex
	var got []string
	return &got, func(d ai.Delta) error {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, d.Text)
		return nil
	}
}

// Ensure each provider is asked for its streaming form, the deltas join to the done text, and
// usage and cost equal the non-streamed answer of the same reply.
func TestStream_MatchesComplete(t *testing.T) {
	t.Parallel()
	for _, provider := range ai.Providers() {
		t.Run(provider, func(t *testing.T) {
			t.Parallel()
			fake := aitest.New(t, provider, aitest.Stream(aitest.StreamOptions{}), aitest.OK(""))
			svc, rec := newService(t, fake, provider, nil)
			in := input(t, `{"messages":[{"role":"user","content":"x"}],"model":"`+models[provider]+`"}`)
			deltas, onDelta := collect()
			got, err := svc.Stream(context.Background(), "u", provider, in, onDelta)
			if err != nil {
				t.Fatal(err)
			}
			sent := fake.Last()
			switch provider {
			case "openai":
				opts, _ := sent.Body["stream_options"].(map[string]any)
				if sent.Body["stream"] != true || opts["include_usage"] != true {
					t.Errorf("openai body %s", sent.Raw)
				}
			case "anthropic":
				if sent.Body["stream"] != true {
					t.Errorf("anthropic body %s", sent.Raw)
				}
			case "gemini":
				if !strings.HasSuffix(sent.Path, ":streamGenerateContent") || sent.Query.Get("alt") != "sse" {
					t.Errorf("gemini path %s?%s", sent.Path, sent.Query.Encode())
				}
			}
			if len(*deltas) != 4 || strings.Join(*deltas, "") != got.Text || got.Text != "Hello from the fake" {
				t.Errorf("deltas %q, text %q", *deltas, got.Text)
			}
			plain, err := svc.Complete(context.Background(), "u", provider, in)
			if err != nil {
				t.Fatal(err)
			}
			if got.Usage != plain.Usage || got.Cost != plain.Cost || got.Model != plain.Model || got.Cost == 0 {
				t.Errorf("streamed %+v, plain %+v", got, plain)
			}
			if got.FinishReason != "stop" {
				t.Errorf("finish reason %q", got.FinishReason)
			}
			recs := rec.all()
			if len(recs) != 2 || recs[0].Status != usage.StatusSuccess || recs[0].TotalTokens != 18 || recs[0].RequestID != got.RequestID {
				t.Errorf("records %+v", recs)
			}
		})
	}
}

// Ensure a piece is handed on as it arrives: the fake holds back its second piece until
// the first delta has reached the caller (or 10 s have passed), so a service that buffered
// pieces would leave the fake waiting out the whole timeout.
func TestStream_NotBuffered(t *testing.T) {
	t.Parallel()
	hold, release, heldBack := aitest.HoldAfterFirst(10 * time.Second)
	fake := aitest.New(t, "openai", aitest.Stream(aitest.StreamOptions{Sent: hold}))
	svc, _ := newService(t, fake, "openai", nil)
	_, err := svc.Stream(context.Background(), "u", "openai", input(t, `{"messages":[{"role":"user","content":"x"}]}`),
		func(ai.Delta) error {
			release()
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}
	if <-heldBack {
		t.Fatal("the first delta did not arrive until the fake sent its second piece")
	}
}

// Ensure a provider failing mid-stream ends the call with an Upstream error after the pieces
// before it, recorded once as a failure; a failure before the stream starts is retried.
func TestStream_Failures(t *testing.T) {
	t.Parallel()
	for _, provider := range ai.Providers() {
		t.Run("MidStream/"+provider, func(t *testing.T) {
			t.Parallel()
			fake := aitest.New(t, provider, aitest.Stream(aitest.StreamOptions{FailAfter: 2}))
			svc, rec := newService(t, fake, provider, nil)
			deltas, onDelta := collect()
			_, err := svc.Stream(context.Background(), "u", provider, input(t, `{"messages":[{"role":"user","content":"x"}]}`), onDelta)
			if apperr.KindOf(err) != apperr.Upstream {
				t.Fatalf("err = %v, want Upstream", err)
			}
			if len(*deltas) != 2 || len(fake.Calls()) != 1 {
				t.Errorf("deltas %q, calls %d: want 2 pieces and no retry", *deltas, len(fake.Calls()))
			}
			if recs := rec.all(); len(recs) != 1 || recs[0].Status != usage.StatusError {
				t.Errorf("records %+v", recs)
			}
		})
	}
	t.Run("500ThenStream", func(t *testing.T) {
		t.Parallel()
		fake := aitest.New(t, "anthropic", aitest.Error("anthropic", 500, "api_error", "boom"), aitest.Stream(aitest.StreamOptions{}))
		svc, rec := newService(t, fake, "anthropic", nil)
		c, err := svc.Stream(context.Background(), "u", "anthropic", input(t, `{"messages":[{"role":"user","content":"x"}]}`), nil)
		if err != nil || c.Text != "Hello from the fake" {
			t.Fatalf("c=%+v err=%v", c, err)
		}
		if recs := rec.all(); len(recs) != 1 || recs[0].Attempts != 2 {
			t.Errorf("records %+v", recs)
		}
	})
	t.Run("NoFirstEventWithinTimeout", func(t *testing.T) {
		t.Parallel()
		fake := aitest.New(t, "openai", aitest.Hang(10*time.Second))
		svc, _ := newService(t, fake, "openai", func(o *ai.Options) { o.Timeout = 100 * time.Millisecond })
		called := false
		_, err := svc.Stream(context.Background(), "u", "openai", input(t, `{"messages":[{"role":"user","content":"x"}]}`),
			func(ai.Delta) error { called = true; return nil })
		if apperr.KindOf(err) != apperr.UpstreamTimeout || called {
			t.Fatalf("err = %v, onDelta called %v", err, called)
		}
	})
	// A Gemini stream ends at the body's end, but only after an answer with a finish reason;
	// an error object in the stream is a failure too.
	piece := `{"candidates":[{"content":{"parts":[{"text":"hel"}],"role":"model"},"index":0}],"modelVersion":"m"}`
	for name, tc := range map[string]struct {
		events []string
		want   string
	}{
		"CutBeforeTheFinish": {[]string{piece}, "ended before its last event"},
		"ErrorEvent":         {[]string{piece, `{"error":{"code":500,"message":"backend boom","status":"INTERNAL"}}`}, "backend boom"},
	} {
		t.Run("Gemini"+name, func(t *testing.T) {
			t.Parallel()
			fake := aitest.New(t, "gemini", aitest.Events(tc.events...))
			svc, rec := newService(t, fake, "gemini", nil)
			deltas, onDelta := collect()
			_, err := svc.Stream(context.Background(), "u", "gemini", input(t, `{"messages":[{"role":"user","content":"x"}]}`), onDelta)
			if apperr.KindOf(err) != apperr.Upstream || !strings.Contains(err.Error(), tc.want) || len(*deltas) != 1 {
				t.Fatalf("err = %v, deltas %q: want an Upstream error saying %q after one piece", err, *deltas, tc.want)
			}
			if recs := rec.all(); len(recs) != 1 || recs[0].Status != usage.StatusError {
				t.Errorf("records %+v: want one failure", recs)
			}
		})
	}
	// A provider sending events without a piece (pings, empty chunks) keeps nothing alive:
	// ai.timeout still bounds the time to the first piece, retries included.
	for provider, event := range map[string]string{
		"openai":    `{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[]}`,
		"anthropic": `ping|{"type":"ping"}`,
		"gemini":    `{"candidates":[{"content":{"parts":[],"role":"model"},"index":0}],"modelVersion":"m"}`,
	} {
		t.Run("OnlyEventsWithoutPiece/"+provider, func(t *testing.T) {
			t.Parallel()
			fake := aitest.New(t, provider, pings(event, 10*time.Millisecond))
			svc, _ := newService(t, fake, provider, func(o *ai.Options) {
				o.Timeout, o.StreamIdleTimeout, o.StreamMaxDuration = 300*time.Millisecond, time.Minute, 3*time.Second
			})
			deltas, onDelta := collect()
			_, err := svc.Stream(context.Background(), "u", provider, input(t, `{"messages":[{"role":"user","content":"x"}]}`), onDelta)
			// Kept alive by the events, the call would end at the longest duration instead.
			if apperr.KindOf(err) != apperr.UpstreamTimeout || !strings.Contains(err.Error(), "(ai.timeout)") || len(*deltas) != 0 {
				t.Fatalf("err = %v, deltas %q: want an UpstreamTimeout naming ai.timeout, before any piece", err, *deltas)
			}
		})
	}
	t.Run("IdleBetweenEvents", func(t *testing.T) {
		t.Parallel()
		fake := aitest.New(t, "gemini", aitest.Stream(aitest.StreamOptions{Gap: 2 * time.Second}))
		svc, rec := newService(t, fake, "gemini", func(o *ai.Options) { o.StreamIdleTimeout = 100 * time.Millisecond })
		deltas, onDelta := collect()
		_, err := svc.Stream(context.Background(), "u", "gemini", input(t, `{"messages":[{"role":"user","content":"x"}]}`), onDelta)
		if apperr.KindOf(err) != apperr.UpstreamTimeout || !strings.Contains(err.Error(), "ai.stream_idle_timeout") {
			t.Fatalf("err = %v, want an UpstreamTimeout naming ai.stream_idle_timeout", err)
		}
		if len(*deltas) != 1 {
			t.Errorf("deltas %q", *deltas)
		}
		// The usage reported with the first piece is recorded.
		if recs := rec.all(); len(recs) != 1 || recs[0].PromptTokens != 11 {
			t.Errorf("records %+v", recs)
		}
	})
}

// Ensure a caller that leaves mid-stream (its context canceled, or onDelta failing) closes the
// upstream connection at once, and the call is recorded once as canceled with the usage so far.
func TestStream_CallerLeaves(t *testing.T) {
	t.Parallel()
	for _, how := range []string{"ContextCanceled", "OnDeltaFails"} {
		t.Run(how, func(t *testing.T) {
			t.Parallel()
			closed := make(chan bool, 1)
			fake := aitest.New(t, "anthropic", aitest.Stream(aitest.StreamOptions{Pieces: strings.Fields("a b c d e f g h"),
				Gap: 50 * time.Millisecond, Done: func(left bool, _ time.Time) { closed <- left }}))
			svc, rec := newService(t, fake, "anthropic", nil)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			n := 0
			_, err := svc.Stream(ctx, "u", "anthropic", input(t, `{"messages":[{"role":"user","content":"x"}]}`),
				func(ai.Delta) error {
					if n++; n == 2 {
						if how == "OnDeltaFails" {
							return errors.New("client gone")
						}
						cancel()
					}
					return nil
				})
			if err == nil {
				t.Fatal("no error")
			}
			select {
			case left := <-closed:
				if !left {
					t.Error("the fake finished its stream: the call was not canceled")
				}
			case <-time.After(10 * time.Second): // generous: a loaded CI machine
				t.Fatal("the fake did not see its connection closed within 10 s")
			}
			recs := rec.all()
			if len(recs) != 1 || recs[0].Status != usage.StatusCanceled || recs[0].PromptTokens != 11 {
				t.Fatalf("records %+v, want one canceled with the prompt tokens reported", recs)
			}
			if rec.ctxs[0].Err() != nil {
				t.Error("record context is canceled")
			}
		})
	}
}

// budget is an in-memory Budget: it refuses past limit and keeps what was settled.
type budget struct {
	limit    float64
	mu       sync.Mutex
	reserved []float64
	settled  []float64
}

type hold struct{ b *budget }

func (hold) Limited() bool { return true }

func (h hold) Settle(ctx context.Context, usd float64) {
	if ctx.Err() != nil {
		panic("settled on a canceled context")
	}
	h.b.mu.Lock()
	defer h.b.mu.Unlock()
	h.b.settled = append(h.b.settled, usd)
}

func (b *budget) Reserve(_ context.Context, _ string, usd float64) (ai.Reservation, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if usd > b.limit {
		return nil, apperr.E(apperr.PaymentRequired, "monthly budget reached")
	}
	b.reserved = append(b.reserved, usd)
	return hold{b}, nil
}

// Ensure the budget is asked before the provider: a refused call never reaches it; a success
// settles its real cost and a failure settles 0.
func TestBudget(t *testing.T) {
	t.Parallel()
	body := `{"messages":[{"role":"user","content":"0123456789"}],"model":"gpt-4o-mini","maxTokens":100}`
	// Worst case: (10 prompt bytes + 16 + 8 overhead tokens for the call and its message) ×
	// 0.15e-6 + 100 × 0.6e-6.
	const worst = (10+16+8)*0.15e-6 + 100*0.6e-6
	t.Run("Refused", func(t *testing.T) {
		t.Parallel()
		fake := aitest.New(t, "openai")
		b := &budget{limit: worst / 2}
		svc, rec := newService(t, fake, "openai", func(o *ai.Options) { o.Budget = b })
		_, err := svc.Complete(context.Background(), "u", "openai", input(t, body))
		if apperr.KindOf(err) != apperr.PaymentRequired {
			t.Fatalf("err = %v", err)
		}
		if len(fake.Calls()) != 0 || len(rec.all()) != 0 {
			t.Error("a refused call reached the provider or was recorded")
		}
	})
	t.Run("SuccessSettlesCost", func(t *testing.T) {
		t.Parallel()
		fake := aitest.New(t, "openai")
		b := &budget{limit: 1}
		svc, _ := newService(t, fake, "openai", func(o *ai.Options) { o.Budget = b })
		c, err := svc.Complete(context.Background(), "u", "openai", input(t, body))
		if err != nil {
			t.Fatal(err)
		}
		if len(b.reserved) != 1 || b.reserved[0] != usage.RoundCost(worst) || len(b.settled) != 1 || b.settled[0] != c.Cost || c.Cost == 0 {
			t.Errorf("reserved %v settled %v cost %v", b.reserved, b.settled, c.Cost)
		}
	})
	t.Run("FailureSettlesZero", func(t *testing.T) {
		t.Parallel()
		fake := aitest.New(t, "openai", aitest.Error("openai", 400, "invalid_request_error", "no"))
		b := &budget{limit: 1}
		svc, _ := newService(t, fake, "openai", func(o *ai.Options) { o.Budget = b })
		if _, err := svc.Complete(context.Background(), "u", "openai", input(t, body)); err == nil {
			t.Fatal("no error")
		}
		if len(b.settled) != 1 || b.settled[0] != 0 {
			t.Errorf("settled %v", b.settled)
		}
	})
}

// Ensure costs carry no binary noise, answered and recorded (usage.RoundCost has the table).
func TestRoundCost(t *testing.T) {
	t.Parallel()
	// 7 words × 0.5e-6 is 3.4999999999999995e-06 in float64.
	fake := aitest.New(t, "openai", aitest.JSON(200, aitest.OpenAIAnswer("gpt-6-luna", "hi", 0, 7, 0)))
	svc, rec := newService(t, fake, "openai", nil)
	c, err := svc.Complete(context.Background(), "u", "openai", input(t, `{"messages":[{"role":"user","content":"x"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if c.Cost != 0.0000035 || rec.all()[0].Cost != 0.0000035 {
		t.Errorf("cost %v, recorded %v, want 0.0000035", c.Cost, rec.all()[0].Cost)
	}
}

// pings answers a stream of event (a data line, or "name|data") every gap until the client
// leaves: a provider that keeps the stream busy without ever sending a piece.
func pings(event string, gap time.Duration) aitest.Responder {
	return func(w http.ResponseWriter, r *http.Request, _ aitest.Call) {
		w.Header().Set("Content-Type", "text/event-stream")
		rc := http.NewResponseController(w)
		line := "data: " + event + "\n\n"
		if name, data, ok := strings.Cut(event, "|"); ok {
			line = "event: " + name + "\ndata: " + data + "\n\n"
		}
		for {
			if _, err := io.WriteString(w, line); err != nil || rc.Flush() != nil {
				return
			}
			select {
			case <-r.Context().Done():
				return
			case <-time.After(gap):
			}
		}
	}
}

// Ensure a stream that ends before the provider's final usage (its caller leaves, or it fails
// after the first piece) is recorded with each count the provider had not reported estimated
// from the text, about four bytes a token, so that it is not free; a count the provider
// reported and a stream that ends normally keep the provider's figures, and a provider failing
// before its first piece is charged nothing.
func TestStream_UnreportedUsageEstimated(t *testing.T) {
	t.Parallel()
	const prompt = "What is the capital of France?" // 30 bytes: 8 tokens
	pieces := []string{"Paris is", " the capital", " of France", "."}
	tests := []struct {
		name, provider string
		reply          aitest.Responder
		leaveAfter     int // pieces, 0: stay to the end
		maxTokens      int // the call's output cap (0: the default)
		status         string
		prompt, out    int64
		estimated      bool
	}{
		// "Paris is the capital" is 20 bytes: 5 tokens.
		{"OpenAICallerLeaves", "openai", aitest.Stream(aitest.StreamOptions{Pieces: pieces, Gap: 20 * time.Millisecond}), 2, 0,
			usage.StatusCanceled, 8, 5, true},
		// The completion's estimate never passes the output cap: no provider bills past it.
		{"OpenAICallerLeavesCapped", "openai", aitest.Stream(aitest.StreamOptions{Pieces: pieces, Gap: 20 * time.Millisecond}), 2, 3,
			usage.StatusCanceled, 8, 3, true},
		{"OpenAIFailsMidStream", "openai", aitest.Stream(aitest.StreamOptions{Pieces: pieces, FailAfter: 2}), 0, 0,
			usage.StatusError, 8, 5, true},
		{"OpenAIEnds", "openai", aitest.Stream(aitest.StreamOptions{Pieces: pieces}), 0, 0,
			usage.StatusSuccess, 11, 7, false},
		{"OpenAIFailsBeforeAnyPiece", "openai", aitest.Events(`{"error":{"message":"boom","type":"server_error"}}`), 0, 0,
			usage.StatusError, 0, 0, false},
		// A prompt count the provider reported is exact and kept, even under the estimate (8).
		{"AnthropicReportedPromptKept", "anthropic", aitest.Stream(aitest.StreamOptions{Pieces: pieces, Prompt: 3, Gap: 20 * time.Millisecond}), 2, 0,
			usage.StatusCanceled, 3, 5, true},
		// Anthropic reported the prompt (11, more than the estimate) but not yet the completion.
		{"AnthropicCallerLeaves", "anthropic", aitest.Stream(aitest.StreamOptions{Pieces: pieces, Gap: 20 * time.Millisecond}), 2, 0,
			usage.StatusCanceled, 11, 5, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fake := aitest.New(t, tc.provider, tc.reply)
			svc, rec := newService(t, fake, tc.provider, nil)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			n := 0
			in := input(t, `{"messages":[{"role":"user","content":"`+prompt+`"}],"model":"`+models[tc.provider]+`"}`)
			if tc.maxTokens > 0 {
				in.MaxTokens = &tc.maxTokens
			}
			_, err := svc.Stream(ctx, "u", tc.provider, in,
				func(ai.Delta) error {
					if n++; n == tc.leaveAfter {
						cancel()
					}
					return nil
				})
			if (err == nil) != (tc.status == usage.StatusSuccess) {
				t.Fatalf("err = %v, want status %s", err, tc.status)
			}
			recs := rec.all()
			if len(recs) != 1 {
				t.Fatalf("records %+v, want one", recs)
			}
			r := recs[0]
			if r.Status != tc.status || r.PromptTokens != tc.prompt || r.CompletionTokens != tc.out || r.Estimated != tc.estimated {
				t.Errorf("record %s, %d + %d tokens, estimated %v; want %s, %d + %d, estimated %v",
					r.Status, r.PromptTokens, r.CompletionTokens, r.Estimated, tc.status, tc.prompt, tc.out, tc.estimated)
			}
			if (r.Cost > 0) != (tc.prompt+tc.out > 0) {
				t.Errorf("cost %v for %d + %d tokens", r.Cost, tc.prompt, tc.out)
			}
		})
	}
}

// Ensure an answer that comes without usage (a provider or a proxy in front of it dropping
// it) is not free: its counts are estimated from the text, streamed or not.
func TestRun_AnswerWithoutUsageEstimated(t *testing.T) {
	t.Parallel()
	text := strings.Repeat("word ", 40) // 200 bytes: 50 tokens
	chunk := func(delta string) string {
		return `{"id":"c","object":"chat.completion.chunk","model":"gpt-4o-mini","choices":[{"index":0,"delta":` + delta + `}]}`
	}
	for name, tc := range map[string]struct {
		reply  aitest.Responder
		stream bool
	}{
		"Answer": {aitest.JSON(200, map[string]any{"id": "c", "object": "chat.completion", "model": "gpt-4o-mini", "usage": nil,
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop", "message": map[string]any{"role": "assistant", "content": text}}}}), false},
		"Stream": {aitest.Events(chunk(`{"role":"assistant","content":"`+text+`"}`),
			`{"id":"c","object":"chat.completion.chunk","model":"gpt-4o-mini","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`, "[DONE]"), true},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			fake := aitest.New(t, "openai", tc.reply)
			svc, rec := newService(t, fake, "openai", nil)
			in := input(t, `{"messages":[{"role":"user","content":"What is the capital of France?"}],"model":"gpt-4o-mini"}`)
			var err error
			if tc.stream {
				_, err = svc.Stream(context.Background(), "u", "openai", in, nil)
			} else {
				_, err = svc.Complete(context.Background(), "u", "openai", in)
			}
			if err != nil {
				t.Fatal(err)
			}
			recs := rec.all()
			if len(recs) != 1 || recs[0].PromptTokens != 8 || recs[0].CompletionTokens != 50 || !recs[0].Estimated || recs[0].Cost <= 0 {
				t.Fatalf("records %+v: want 8 + 50 tokens estimated, and their cost", recs)
			}
		})
	}
}

// Ensure an error a provider reports in its stream before the first piece is classified as
// the same error answered with its status would be (the client's request refused is a 400,
// not a server error an SDK retries), with the parameter and code OpenAI named (as its error
// answer's are read; a code about the server's key is the server's key refused), and one after
// a piece stays a mid-stream failure.
func TestStream_ErrorEventBeforeFirstPiece(t *testing.T) {
	t.Parallel()
	piece := `{"id":"c","choices":[{"delta":{"content":"Hel"}}]}`
	for name, tc := range map[string]struct {
		provider string
		events   []string
		kind     apperr.Kind
		want     string
		param    string // the parameter the error names
		code     string // the code the error carries
	}{
		"OpenAIRefusedRequest": {"openai", []string{`{"error":{"message":"context too long","type":"invalid_request_error","code":"context_length_exceeded"}}`},
			apperr.Invalid, "openai rejected the request: context too long", "", "context_length_exceeded"},
		"OpenAIRefusedNamingParam": {"openai", []string{`{"error":{"message":"bad top_p","type":"invalid_request_error","param":"top_p","code":"invalid_value"}}`},
			apperr.Invalid, "openai rejected the request: bad top_p", "top_p", "invalid_value"},
		"OpenAIRefusedServerKey": {"openai", []string{`{"error":{"message":"Incorrect API key provided.","type":"invalid_request_error","code":"invalid_api_key"}}`},
			apperr.Upstream, "openai refused the server's API key: check ai.openai.api_key: Incorrect API key provided.", "", ""},
		"OpenAIRateLimited": {"openai", []string{`{"error":{"message":"slow down","type":"rate_limit_exceeded"}}`},
			apperr.RateLimited, "openai rate limit reached: slow down", "", ""},
		"AnthropicOverloaded": {"anthropic", []string{`message_start|{"type":"message_start","message":{"id":"m","usage":{"input_tokens":3}}}`,
			`error|{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`},
			apperr.Upstream, "anthropic failed (status 529): overloaded_error: Overloaded", "", ""},
		"GeminiExhausted": {"gemini", []string{`{"error":{"code":429,"message":"Quota exceeded.","status":"RESOURCE_EXHAUSTED"}}`},
			apperr.RateLimited, "gemini rate limit reached: Quota exceeded.", "", ""},
		"GeminiUnavailable": {"gemini", []string{`{"error":{"code":503,"message":"Overloaded.","status":"UNAVAILABLE"}}`},
			apperr.Upstream, "gemini failed (status 503): Overloaded.", "", ""},
		"OpenAIAfterAPiece": {"openai", []string{piece, `{"error":{"message":"boom","type":"invalid_request_error"}}`},
			apperr.Upstream, "openai failed mid-stream: boom", "", ""},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			fake := aitest.New(t, tc.provider, aitest.Events(tc.events...))
			svc, _ := newService(t, fake, tc.provider, nil)
			_, err := svc.Stream(context.Background(), "u", tc.provider, input(t, `{"messages":[{"role":"user","content":"x"}]}`), nil)
			if apperr.KindOf(err) != tc.kind || err.Error() != tc.want {
				t.Errorf("err = %v (kind %v), want %q (kind %v)", err, apperr.KindOf(err), tc.want, tc.kind)
			}
			if e := apperr.As(err); e == nil || e.Param != tc.param || e.Code != tc.code {
				t.Errorf("err = %#v, want param %q and code %q", e, tc.param, tc.code)
			}
		})
	}
}

// Ensure a call whose caller leaves while the provider has its request is charged its
// prompt's estimate (the provider bills what it received), and one that leaves between two
// attempts (the first refused, not billed) costs nothing.
func TestComplete_CallerLeavesWhileProviderWorks(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		reply  aitest.Responder
		prompt int64
	}{
		"InFlight":        {aitest.Hang(10 * time.Second), 8},
		"AfterHeaders":    {headersOnly("application/json"), 8},
		"BetweenAttempts": {aitest.Error("openai", 429, "rate_limit_exceeded", "slow down"), 0},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			fake := aitest.New(t, "openai", tc.reply)
			svc, rec := newService(t, fake, "openai", func(o *ai.Options) { o.RetryBase, o.RetryCap = 2*time.Second, 4*time.Second })
			ctx, cancel := context.WithCancel(context.Background()) // no deadline: retries wait
			defer cancel()
			time.AfterFunc(300*time.Millisecond, cancel)
			in := input(t, `{"messages":[{"role":"user","content":"What is the capital of France?"}],"model":"gpt-4o-mini"}`)
			if _, err := svc.Complete(ctx, "u", "openai", in); err == nil {
				t.Fatal("no error")
			}
			recs := rec.all()
			if len(recs) != 1 || recs[0].Status != usage.StatusCanceled || recs[0].PromptTokens != tc.prompt ||
				recs[0].Estimated != (tc.prompt > 0) || (recs[0].Cost > 0) != (tc.prompt > 0) {
				t.Fatalf("records %+v: want one canceled with %d prompt tokens estimated", recs, tc.prompt)
			}
		})
	}
}

// Ensure a call that ai.timeout ends while the provider has its request is charged its
// prompt's estimate like a caller leaving (the provider bills it), and one whose time runs out
// while waiting between two attempts (the first refused, not billed) costs nothing.
func TestComplete_TimeoutWhileProviderWorks(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		reply  aitest.Responder
		stream bool
		prompt int64
	}{
		"InFlight":           {aitest.Hang(10 * time.Second), false, 8},
		"StreamInFlight":     {aitest.Hang(10 * time.Second), true, 8},
		"StreamAfterHeaders": {headersOnly("text/event-stream"), true, 8},
		"BetweenAttempts":    {aitest.Error("openai", 429, "rate_limit_exceeded", "slow down"), false, 0},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			fake := aitest.New(t, "openai", tc.reply)
			svc, rec := newService(t, fake, "openai", func(o *ai.Options) {
				o.Timeout, o.RetryBase, o.RetryCap = 300*time.Millisecond, 200*time.Millisecond, time.Second
			})
			in := input(t, `{"messages":[{"role":"user","content":"What is the capital of France?"}],"model":"gpt-4o-mini"}`)
			var err error
			if tc.stream {
				_, err = svc.Stream(context.Background(), "u", "openai", in, func(ai.Delta) error { return nil })
			} else {
				_, err = svc.Complete(context.Background(), "u", "openai", in)
			}
			if apperr.KindOf(err) != apperr.UpstreamTimeout && !(tc.prompt == 0 && err != nil) {
				t.Fatalf("err = %v, want a timeout", err)
			}
			recs := rec.all()
			if len(recs) != 1 || recs[0].Status != usage.StatusError || recs[0].PromptTokens != tc.prompt ||
				recs[0].Estimated != (tc.prompt > 0) || (recs[0].Cost > 0) != (tc.prompt > 0) {
				t.Fatalf("records %+v: want one failed with %d prompt tokens estimated", recs, tc.prompt)
			}
		})
	}
}

// Ensure an Anthropic stream that ends without its final usage (no message_delta: a proxy in
// front of the provider dropped it) is not billed the one output token message_start counts
// so far: the completion is estimated from the text, the reported prompt kept.
func TestStream_AnthropicEndWithoutFinalUsage(t *testing.T) {
	t.Parallel()
	text := strings.Repeat("word ", 40) // 200 bytes: 50 tokens
	fake := aitest.New(t, "anthropic", aitest.Events(
		`message_start|{"type":"message_start","message":{"id":"m","model":"claude-haiku-4-5","usage":{"input_tokens":11,"output_tokens":1}}}`,
		`content_block_start|{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
		`content_block_delta|{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"`+text+`"}}`,
		`content_block_stop|{"type":"content_block_stop","index":0}`,
		`message_stop|{"type":"message_stop"}`))
	svc, rec := newService(t, fake, "anthropic", nil)
	in := input(t, `{"messages":[{"role":"user","content":"What is the capital of France?"}],"model":"claude-haiku-4-5"}`)
	if _, err := svc.Stream(context.Background(), "u", "anthropic", in, nil); err != nil {
		t.Fatal(err)
	}
	recs := rec.all()
	if len(recs) != 1 || recs[0].PromptTokens != 11 || recs[0].CompletionTokens != 50 || !recs[0].Estimated {
		t.Fatalf("records %+v: want 11 reported + 50 estimated tokens", recs)
	}
}

// headersOnly answers 200 with contentType and then nothing, until the caller goes away: a
// provider that has the request and is working on it.
func headersOnly(contentType string) aitest.Responder {
	return func(w http.ResponseWriter, r *http.Request, _ aitest.Call) {
		w.Header().Set("Content-Type", contentType)
		w.WriteHeader(http.StatusOK)
		_ = http.NewResponseController(w).Flush()
		<-r.Context().Done()
	}
}
