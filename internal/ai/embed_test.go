package ai_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/acme/app/internal/ai"
	"github.com/acme/app/internal/ai/aitest"
	"github.com/acme/app/internal/apperr"
	"github.com/acme/app/internal/usage"
)

// embedFixture is the AI service against a fake openai and a fake gemini, with a recorder and
// a budget that remember what they were given.
type embedFixture struct {
	svc    *ai.Service
	fakes  map[string]*aitest.Server
	rec    *embedRecorder
	budget *embedBudget
	obs    *embedObserver
}

// embedObserver keeps what the metrics would be told of each finished call.
type embedObserver struct {
	mu    sync.Mutex
	calls []string
}

func (o *embedObserver) ObserveAI(provider, model, status string, prompt, completion int64, cost float64, _ time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.calls = append(o.calls, fmt.Sprintf("%s %s %s %d %d %t", provider, model, status, prompt, completion, cost > 0))
}
func (*embedObserver) StreamStarted()  {}
func (*embedObserver) StreamEnded()    {}
func (*embedObserver) BudgetRejected() {}

type embedRecorder struct {
	mu   sync.Mutex
	recs []usage.Record
}

func (r *embedRecorder) Record(_ context.Context, rec usage.Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.recs = append(r.recs, rec)
	return nil
}

func (r *embedRecorder) all() []usage.Record {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]usage.Record(nil), r.recs...)
}

// embedBudget holds every reservation and the cost each was settled with.
type embedBudget struct {
	mu       sync.Mutex
	reserved []float64
	settled  []float64
}

func (b *embedBudget) Reserve(_ context.Context, _ string, usd float64) (ai.Reservation, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.reserved = append(b.reserved, usd)
	return embedHold{b}, nil
}

type embedHold struct{ b *embedBudget }

func (embedHold) Limited() bool { return true }

func (h embedHold) Settle(_ context.Context, usd float64) {
	h.b.mu.Lock()
	defer h.b.mu.Unlock()
	h.b.settled = append(h.b.settled, usd)
}

func newEmbedFixture(t *testing.T, script ...aitest.Responder) *embedFixture {
	t.Helper()
	fx := &embedFixture{fakes: map[string]*aitest.Server{}, rec: &embedRecorder{}, budget: &embedBudget{}, obs: &embedObserver{}}
	cfg := map[string]ai.ProviderConfig{}
	for _, p := range []string{"openai", "gemini"} {
		fx.fakes[p] = aitest.New(t, p, script...)
		cfg[p] = ai.ProviderConfig{APIKey: testKey, BaseURL: fx.fakes[p].BaseURL()}
	}
	cfg["anthropic"] = ai.ProviderConfig{APIKey: testKey, BaseURL: "http://127.0.0.1:1"}
	fx.svc = ai.New(ai.Options{Providers: cfg, Timeout: 5 * time.Second, Recorder: fx.rec, Budget: fx.budget, Observer: fx.obs,
		RetryBase: time.Millisecond, RetryCap: 50 * time.Millisecond})
	return fx
}

func intp(n int) *int { return &n }

// Ensure each provider is sent its own wire format and the vectors, usage, cost and record
// come back as the provider answered (Gemini's tokens estimated).
func TestEmbed_WireFormats(t *testing.T) {
	t.Parallel()
	fx := newEmbedFixture(t)
	for _, tc := range []struct {
		name, provider string
		in             ai.EmbedInput
		wantPath       string
		wantBody       string
		texts          []string // whose fake vectors are answered
		dims           int
		tokens         int64
		estimated      bool
		cost           float64
	}{
		{"openai list", "openai", ai.EmbedInput{Model: "text-embedding-3-small", Texts: []string{"hello world", "a second text here"}},
			"/v1/embeddings", `{"model":"text-embedding-3-small","input":["hello world","a second text here"]}`,
			[]string{"hello world", "a second text here"}, 8, 6, false, 6 * 2e-8},
		{"openai one string, every option", "openai", ai.EmbedInput{Model: "text-embedding-3-large", Texts: []string{"one two three"}, Single: true,
			EncodingFormat: "base64", Dimensions: intp(16), User: "u-1"},
			"/v1/embeddings", `{"model":"text-embedding-3-large","input":"one two three","encoding_format":"base64","dimensions":16,"user":"u-1"}`,
			[]string{"one two three"}, 16, 3, false, 3 * 1.3e-7},
		{"openai token arrays", "openai", ai.EmbedInput{Model: "text-embedding-ada-002", Tokens: [][]int64{{1, 2, 3}, {4}}},
			"/v1/embeddings", `{"model":"text-embedding-ada-002","input":[[1,2,3],[4]]}`,
			[]string{"1 2 3", "4"}, 8, 4, false, 4 * 1e-7},
		{"openai one token array", "openai", ai.EmbedInput{Model: "text-embedding-3-small", Tokens: [][]int64{{7, 8}}, Single: true},
			"/v1/embeddings", `{"model":"text-embedding-3-small","input":[7,8]}`,
			[]string{"7 8"}, 8, 2, false, 2 * 2e-8},
		{"gemini batch", "gemini", ai.EmbedInput{Model: "gemini-embedding-001", Texts: []string{"hello gemini world", "héllo"}, Dimensions: intp(4),
			EncodingFormat: "base64", User: "not sent"},
			"/v1beta/models/gemini-embedding-001:batchEmbedContents",
			`{"requests":[{"model":"models/gemini-embedding-001","content":{"parts":[{"text":"hello gemini world"}]},"outputDimensionality":4},` +
				`{"model":"models/gemini-embedding-001","content":{"parts":[{"text":"héllo"}]},"outputDimensionality":4}]}`,
			[]string{"hello gemini world", "héllo"}, 4, 5 + 2, true, 7 * 1.5e-7},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(fx.rec.all())
			got, err := fx.svc.Embed(context.Background(), "user-1", tc.provider, tc.in)
			if err != nil {
				t.Fatal(err)
			}
			call := fx.fakes[tc.provider].Last()
			if call.Path != tc.wantPath {
				t.Fatalf("path %s, want %s", call.Path, tc.wantPath)
			}
			var gotBody, wantBody any
			_ = json.Unmarshal(call.Raw, &gotBody)
			_ = json.Unmarshal([]byte(tc.wantBody), &wantBody)
			if diff := cmp.Diff(wantBody, gotBody); diff != "" {
				t.Fatalf("body sent (-want +got):\n%s", diff)
			}
			if h := call.Header; tc.provider == "openai" && h.Get("Authorization") != "Bearer "+testKey ||
				tc.provider == "gemini" && (h.Get("X-Goog-Api-Key") != testKey || call.Query.Get("key") != "") {
				t.Fatalf("authentication headers %v", h)
			}
			want := make([][]float32, len(tc.texts))
			for i, text := range tc.texts {
				want[i] = aitest.EmbeddingVector(text, tc.dims)
			}
			if diff := cmp.Diff(want, got.Vectors); diff != "" {
				t.Fatalf("vectors (-want +got):\n%s", diff)
			}
			if got.Usage.PromptTokens != tc.tokens || got.Usage.TotalTokens != tc.tokens || got.Usage.CompletionTokens != 0 ||
				got.Estimated != tc.estimated || math.Abs(got.Cost-tc.cost) > 1e-12 || got.Provider != tc.provider || got.Model != tc.in.Model {
				t.Fatalf("answer %+v", got)
			}
			recs := fx.rec.all()
			if len(recs) != before+1 {
				t.Fatalf("%d records", len(recs)-before)
			}
			r := recs[len(recs)-1]
			if r.Status != usage.StatusSuccess || r.Provider != tc.provider || r.Model != tc.in.Model || r.PromptTokens != tc.tokens ||
				r.TotalTokens != tc.tokens || r.RequestID != got.RequestID || r.UserID != "user-1" || r.Prices == nil || r.Estimated != tc.estimated {
				t.Fatalf("record %+v", r)
			}
		})
	}
}

// Ensure the budget holds the worst case (every input byte a token at the input price) and is
// settled with the real cost, and the metrics are told of the call.
func TestEmbed_Budget(t *testing.T) {
	t.Parallel()
	fx := newEmbedFixture(t)
	got, err := fx.svc.Embed(context.Background(), "u", "openai", ai.EmbedInput{Model: "text-embedding-3-small", Texts: []string{"four words in here", "x"}})
	if err != nil {
		t.Fatal(err)
	}
	fx.budget.mu.Lock()
	defer fx.budget.mu.Unlock()
	if len(fx.budget.reserved) != 1 || math.Abs(fx.budget.reserved[0]-19*2e-8) > 1e-15 ||
		len(fx.budget.settled) != 1 || fx.budget.settled[0] != got.Cost || got.Cost == 0 {
		t.Fatalf("reserved %v settled %v cost %g", fx.budget.reserved, fx.budget.settled, got.Cost)
	}
	fx.obs.mu.Lock()
	defer fx.obs.mu.Unlock()
	if want := []string{"openai text-embedding-3-small 200 5 0 true"}; !cmp.Equal(fx.obs.calls, want) {
		t.Fatalf("observed %q, want %q", fx.obs.calls, want)
	}
}

// Ensure what no provider takes is Invalid naming the parameter, and nothing is sent or
// recorded.
func TestEmbed_Refused(t *testing.T) {
	t.Parallel()
	fx := newEmbedFixture(t)
	many := make([]string, ai.MaxEmbedInputs+1)
	for i := range many {
		many[i] = "x"
	}
	for _, tc := range []struct {
		name, provider string
		in             ai.EmbedInput
		param          string
	}{
		{"anthropic", "anthropic", ai.EmbedInput{Model: "claude-haiku-4-5", Texts: []string{"x"}}, "model"},
		{"no model", "openai", ai.EmbedInput{Texts: []string{"x"}}, "model"},
		{"model with a slash", "gemini", ai.EmbedInput{Model: "a/../b", Texts: []string{"x"}}, "model"},
		{"no input", "openai", ai.EmbedInput{Model: "m"}, "input"},
		{"empty list", "openai", ai.EmbedInput{Model: "m", Texts: []string{}}, "input"},
		{"empty text", "openai", ai.EmbedInput{Model: "m", Texts: []string{"a", ""}}, "input.1"},
		{"empty token array", "openai", ai.EmbedInput{Model: "m", Tokens: [][]int64{{}}}, "input.0"},
		{"negative token", "openai", ai.EmbedInput{Model: "m", Tokens: [][]int64{{1, -1}}}, "input.0"},
		{"too many", "openai", ai.EmbedInput{Model: "m", Texts: many}, "input"},
		{"gemini tokens", "gemini", ai.EmbedInput{Model: "m", Tokens: [][]int64{{1}}}, "input"},
		{"dimensions 0", "openai", ai.EmbedInput{Model: "m", Texts: []string{"x"}, Dimensions: intp(0)}, "dimensions"},
		{"encoding", "openai", ai.EmbedInput{Model: "m", Texts: []string{"x"}, EncodingFormat: "int8"}, "encoding_format"},
	} {
		_, err := fx.svc.Embed(context.Background(), "u", tc.provider, tc.in)
		e := apperr.As(err)
		if e == nil || e.Kind != apperr.Invalid || e.Param != tc.param || e.Error() == "" {
			t.Errorf("%s: %v (param %q), want Invalid naming %q", tc.name, err, func() string {
				if e != nil {
					return e.Param
				}
				return ""
			}(), tc.param)
		}
	}
	for p, f := range fx.fakes {
		if n := len(f.Calls()); n != 0 {
			t.Errorf("%s received %d requests", p, n)
		}
	}
	if n := len(fx.rec.all()); n != 0 {
		t.Errorf("%d records", n)
	}
}

// Ensure an answer of the wrong shape is a clear Upstream error, recorded as a failure, never
// a panic.
func TestEmbed_MalformedAnswers(t *testing.T) {
	t.Parallel()
	vec := `{"object":"embedding","index":0,"embedding":[0.5,1]}`
	openAI := func(data string) string {
		return `{"object":"list","model":"m","data":[` + data + `],"usage":{"prompt_tokens":1,"total_tokens":1}}`
	}
	for _, tc := range []struct {
		name, provider, body, want string
	}{
		{"not JSON", "openai", `nope`, "not valid JSON"},
		{"not an object", "openai", `[1]`, "not a JSON object"},
		{"too few vectors", "openai", openAI(``), "0 embeddings for 1 inputs"},
		{"too many vectors", "openai", openAI(vec + "," + vec), "2 embeddings for 1 inputs"},
		{"strings in a vector", "openai", openAI(`{"index":0,"embedding":["a","b"]}`), "not an array of numbers"},
		{"an object for a vector", "openai", openAI(`{"index":0,"embedding":{"a":1}}`), "not an array of numbers"},
		{"an empty vector", "openai", openAI(`{"index":0,"embedding":[]}`), "is empty"},
		{"a null vector", "openai", openAI(`{"index":0,"embedding":null}`), "is empty"},
		{"out of float32", "openai", openAI(`{"index":0,"embedding":[1e300]}`), "out of float32"},
		{"bad base64", "openai", openAI(`{"index":0,"embedding":"!!"}`), "not base64"},
		{"base64 of 3 bytes", "openai", openAI(`{"index":0,"embedding":"AAAA"}`), "not base64"},
		{"base64 NaN", "openai", openAI(`{"index":0,"embedding":"AADAfw=="}`), "not a finite number"},
		{"wrong index", "openai", openAI(`{"index":3,"embedding":[1]}`), "wrong index"},
		{"impossible usage", "openai", `{"data":[` + vec + `],"usage":{"prompt_tokens":-1}}`, "impossible token count"},
		{"usage of the wrong type", "openai", `{"data":[` + vec + `],"usage":{"prompt_tokens":"many"}}`, "unreadable"},
		{"gemini no embeddings", "gemini", `{}`, "0 embeddings for 1 inputs"},
		{"gemini base64", "gemini", `{"embeddings":[{"values":"AAAAAA=="}]}`, "not an array of numbers"},
		{"gemini nulls", "gemini", `{"embeddings":[{"values":[null,"x"]}]}`, "not an array of numbers"},
		{"gemini missing values", "gemini", `{"embeddings":[{}]}`, "not an array of numbers"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fx := newEmbedFixture(t, aitest.JSON(http.StatusOK, tc.body))
			_, err := fx.svc.Embed(context.Background(), "u", tc.provider, ai.EmbedInput{Model: "m", Texts: []string{"x"}})
			if apperr.KindOf(err) != apperr.Upstream || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("%v, want Upstream with %q", err, tc.want)
			}
			recs := fx.rec.all()
			if len(recs) != 1 || recs[0].Status != usage.StatusError || !strings.Contains(recs[0].Error, tc.want) {
				t.Fatalf("records %+v", recs)
			}
		})
	}
}

// Ensure the provider's refusals are classified as for chats, the key never shown.
func TestEmbed_ProviderFailures(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		provider string
		answer   aitest.Responder
		kind     apperr.Kind
		attempts int
	}{
		{"openai 400", "openai", aitest.Error("openai", 400, "invalid_request_error", "This model does not support dimensions"), apperr.Invalid, 1},
		{"openai 401 quoting the key", "openai", aitest.Error("openai", 401, "invalid_api_key", "Incorrect API key provided: "+testKey), apperr.Upstream, 1},
		{"gemini 500 retried", "gemini", aitest.Error("gemini", 500, "INTERNAL", "boom"), apperr.Upstream, 3},
		{"openai 429", "openai", aitest.Error("openai", 429, "rate_limit_exceeded", "slow down", "retry-after", "60"), apperr.RateLimited, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fx := newEmbedFixture(t, tc.answer)
			_, err := fx.svc.Embed(context.Background(), "u", tc.provider, ai.EmbedInput{Model: "m", Texts: []string{"x"}})
			if apperr.KindOf(err) != tc.kind || strings.Contains(err.Error(), testKey) {
				t.Fatalf("%v, want kind %v without the key", err, tc.kind)
			}
			recs := fx.rec.all()
			if len(recs) != 1 || recs[0].Attempts != tc.attempts || strings.Contains(recs[0].Error, testKey) {
				t.Fatalf("records %+v", recs)
			}
		})
	}
}

// Ensure Gemini is sent inputs past its batch size in consecutive batches, answered in order
// as one call (one record, the attempts and estimated tokens summed), and that a batch failing
// fails the call, the batches answered before it priced and recorded with the failure.
func TestEmbed_GeminiBatches(t *testing.T) {
	t.Parallel()
	texts := make([]string, 2*ai.GeminiEmbedBatch+50)
	for i := range texts {
		texts[i] = fmt.Sprintf("text %d", i)
	}
	var tokens int64
	for _, text := range texts {
		tokens += ai.EstimateTokens(text)
	}
	fx := newEmbedFixture(t)
	got, err := fx.svc.Embed(context.Background(), "u", "gemini", ai.EmbedInput{Model: "gemini-embedding-001", Texts: texts})
	if err != nil {
		t.Fatal(err)
	}
	calls := fx.fakes["gemini"].Calls()
	if len(calls) != 3 {
		t.Fatalf("%d calls", len(calls))
	}
	for i, want := range []int{100, 100, 50} {
		if n := len(calls[i].Body["requests"].([]any)); n != want {
			t.Fatalf("call %d: %d requests, want %d", i, n, want)
		}
	}
	if len(got.Vectors) != len(texts) || got.Usage.PromptTokens != tokens {
		t.Fatalf("%d vectors, %d tokens", len(got.Vectors), got.Usage.PromptTokens)
	}
	for i, text := range texts {
		if !cmp.Equal(got.Vectors[i], aitest.EmbeddingVector(text, 8)) {
			t.Fatalf("vector %d is not %q's", i, text)
		}
	}
	if recs := fx.rec.all(); len(recs) != 1 || recs[0].Attempts != 3 || recs[0].PromptTokens != tokens {
		t.Fatalf("records %+v", recs)
	}

	failing := newEmbedFixture(t, aitest.Embeddings(), aitest.Error("gemini", 400, "INVALID_ARGUMENT", "text too long"))
	_, err = failing.svc.Embed(context.Background(), "u", "gemini", ai.EmbedInput{Model: "gemini-embedding-001", Texts: texts})
	if apperr.KindOf(err) != apperr.Invalid || !strings.Contains(err.Error(), "text too long") {
		t.Fatalf("%v", err)
	}
	var first int64
	for _, text := range texts[:ai.GeminiEmbedBatch] {
		first += ai.EstimateTokens(text)
	}
	recs := failing.rec.all()
	if len(recs) != 1 || recs[0].Status != usage.StatusError || recs[0].Attempts != 2 || recs[0].PromptTokens != first || recs[0].Cost <= 0 {
		t.Fatalf("records %+v", recs)
	}
	if n := len(failing.fakes["gemini"].Calls()); n != 2 {
		t.Fatalf("%d calls after the failing batch", n)
	}
}

// Ensure EncodeBase64 is OpenAI's encoding: little-endian float32s.
func TestEncodeBase64(t *testing.T) {
	t.Parallel()
	if got := ai.EncodeBase64([]float32{1, -0.5}); got != "AACAPwAAAL8=" {
		t.Fatalf("%s", got)
	}
	if got := ai.EstimateTokens("héllo"); got != 2 {
		t.Fatalf("estimate %d", got)
	}
}

// Ensure an embeddings call whose caller leaves while the provider has the request is charged
// its inputs' estimate (the provider bills what it received), recorded as canceled.
func TestEmbed_CallerLeavesWhileProviderWorks(t *testing.T) {
	t.Parallel()
	fx := newEmbedFixture(t, aitest.Hang(10*time.Second))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	time.AfterFunc(200*time.Millisecond, cancel)
	texts := []string{"four words in here", "x"}
	if _, err := fx.svc.Embed(ctx, "u", "openai", ai.EmbedInput{Model: "text-embedding-3-small", Texts: texts}); err == nil {
		t.Fatal("no error")
	}
	want := ai.EstimateTokens(texts[0]) + ai.EstimateTokens(texts[1])
	recs := fx.rec.all()
	if len(recs) != 1 || recs[0].Status != usage.StatusCanceled || recs[0].PromptTokens != want || !recs[0].Estimated || recs[0].Cost <= 0 {
		t.Fatalf("records %+v: want one canceled, charged %d estimated tokens", recs, want)
	}
}

// Ensure an embeddings call that ai.timeout ends while the provider has the request is charged
// its inputs' estimate too, recorded as failed.
func TestEmbed_TimeoutWhileProviderWorks(t *testing.T) {
	t.Parallel()
	fx := newEmbedFixture(t, aitest.Hang(10*time.Second))
	fx.svc = ai.New(ai.Options{Providers: map[string]ai.ProviderConfig{
		"openai": {APIKey: testKey, BaseURL: fx.fakes["openai"].BaseURL()},
	}, Timeout: 200 * time.Millisecond, Recorder: fx.rec, Budget: fx.budget, Observer: fx.obs})
	texts := []string{"four words in here", "x"}
	_, err := fx.svc.Embed(context.Background(), "u", "openai", ai.EmbedInput{Model: "text-embedding-3-small", Texts: texts})
	if apperr.KindOf(err) != apperr.UpstreamTimeout {
		t.Fatalf("err = %v, want a timeout", err)
	}
	want := ai.EstimateTokens(texts[0]) + ai.EstimateTokens(texts[1])
	recs := fx.rec.all()
	if len(recs) != 1 || recs[0].Status != usage.StatusError || recs[0].PromptTokens != want || !recs[0].Estimated || recs[0].Cost <= 0 {
		t.Fatalf("records %+v: want one failed, charged %d estimated tokens", recs, want)
	}
}
