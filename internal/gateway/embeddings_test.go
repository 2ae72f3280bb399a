package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/acme/app/internal/ai"
	"github.com/acme/app/internal/ai/aitest"
	"github.com/acme/app/internal/apperr"
)

// newEmbedService is the gateway over the AI service, against fake openai and gemini
// providers answering script (default: their embeddings).
func newEmbedService(t testing.TB, script ...aitest.Responder) (*Service, map[string]*aitest.Server) {
	t.Helper()
	prices, err := ai.LoadPrices("", nil)
	if err != nil {
		t.Fatal(err)
	}
	fakes := map[string]*aitest.Server{}
	cfg := map[string]ai.ProviderConfig{}
	for _, p := range ai.Providers() {
		fakes[p] = aitest.New(t, p, script...)
		cfg[p] = ai.ProviderConfig{APIKey: "k-" + p, BaseURL: fakes[p].BaseURL()}
	}
	svc := ai.New(ai.Options{Providers: cfg, Timeout: 5 * time.Second, Prices: prices, MaxRetries: -1})
	return New(Options{AI: svc, Prices: prices, Providers: map[string]string{"openai": "", "gemini": ""}}), fakes
}

// Ensure what /v1/embeddings honours reaches the AI service's input, routed to its provider.
func TestParseEmbeddingsAccepted(t *testing.T) {
	t.Parallel()
	s, _ := newEmbedService(t)
	for _, tc := range []struct {
		name, body string
		want       EmbeddingsRequest
	}{
		{"one string", `{"model":"openai/text-embedding-3-small","input":"hi"}`,
			EmbeddingsRequest{Provider: "openai", Model: "openai/text-embedding-3-small",
				Input: ai.EmbedInput{Model: "text-embedding-3-small", Texts: []string{"hi"}, Single: true}}},
		{"strings and every option", `{"model":"gemini/gemini-embedding-001","input":["a","b"],"encoding_format":"base64","dimensions":256,"user":"u"}`,
			EmbeddingsRequest{Provider: "gemini", Model: "gemini/gemini-embedding-001", Base64: true,
				Input: ai.EmbedInput{Model: "gemini-embedding-001", Texts: []string{"a", "b"}, EncodingFormat: "base64", Dimensions: dims(256), User: "u"}}},
		{"bare openai name by the price table", `{"model":"text-embedding-3-large","input":["x"],"encoding_format":"float"}`,
			EmbeddingsRequest{Provider: "openai", Model: "text-embedding-3-large",
				Input: ai.EmbedInput{Model: "text-embedding-3-large", Texts: []string{"x"}, EncodingFormat: "float"}}},
		{"bare gemini name", `{"model":"gemini-embedding-001","input":"x"}`,
			EmbeddingsRequest{Provider: "gemini", Model: "gemini-embedding-001",
				Input: ai.EmbedInput{Model: "gemini-embedding-001", Texts: []string{"x"}, Single: true}}},
		{"a token array", `{"model":"openai/text-embedding-3-small","input":[1,2,3],"user":null}`,
			EmbeddingsRequest{Provider: "openai", Model: "openai/text-embedding-3-small",
				Input: ai.EmbedInput{Model: "text-embedding-3-small", Tokens: [][]int64{{1, 2, 3}}, Single: true}}},
		{"token arrays", `{"model":"openai/text-embedding-3-small","input":[[1],[2,3]]}`,
			EmbeddingsRequest{Provider: "openai", Model: "openai/text-embedding-3-small",
				Input: ai.EmbedInput{Model: "text-embedding-3-small", Tokens: [][]int64{{1}, {2, 3}}}}},
		{"an unpriced model named with its provider", `{"model":"openai/my-finetune","input":"x"}`,
			EmbeddingsRequest{Provider: "openai", Model: "openai/my-finetune",
				Input: ai.EmbedInput{Model: "my-finetune", Texts: []string{"x"}, Single: true}}},
	} {
		got, err := s.ParseEmbeddings([]byte(tc.body))
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if diff := cmp.Diff(tc.want, *got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
	}
}

// Ensure every refusal is Invalid naming the parameter, with OpenAI's code.
func TestParseEmbeddingsRefused(t *testing.T) {
	t.Parallel()
	s, _ := newEmbedService(t)
	many := `"` + strings.Repeat(`x","`, ai.MaxEmbedInputs) + `x"`
	for _, tc := range []struct {
		body, param, code string
	}{
		{`[]`, "", ""},
		{`{"input":"x"}`, "model", ""},
		{`{"model":1,"input":"x"}`, "model", "invalid_type"},
		{`{"model":"anthropic/claude-haiku-4-5","input":"x"}`, "model", "model_not_supported"},
		{`{"model":"claude-haiku-4-5","input":"x"}`, "model", "model_not_supported"},
		{`{"model":"gpt-4o-mini","input":"x"}`, "model", "invalid_value"},
		{`{"model":"no-such-model","input":"x"}`, "model", "model_not_found"},
		{`{"model":"openai/","input":"x"}`, "model", "model_not_found"},
		{`{"model":"openai/m"}`, "input", ""},
		{`{"model":"openai/m","input":""}`, "input", "invalid_value"},
		{`{"model":"openai/m","input":[]}`, "input", "empty_array"},
		{`{"model":"openai/m","input":{"a":1}}`, "input", "invalid_type"},
		{`{"model":"openai/m","input":true}`, "input", "invalid_type"},
		{`{"model":"openai/m","input":["a",""]}`, "input[1]", "invalid_value"},
		{`{"model":"openai/m","input":["a",1]}`, "input[1]", "invalid_type"},
		{`{"model":"openai/m","input":[[1],[]]}`, "input[1]", "invalid_value"},
		{`{"model":"openai/m","input":[[1],["a"]]}`, "input[1]", "invalid_type"},
		{`{"model":"openai/m","input":[1,-2]}`, "input", "invalid_type"},
		{`{"model":"openai/m","input":[1.5]}`, "input", "invalid_type"},
		{`{"model":"openai/m","input":[` + many + `]}`, "input", "invalid_value"},
		{`{"model":"gemini/m","input":[1,2]}`, "input", "invalid_type"},
		{`{"model":"gemini/m","input":[[1,2]]}`, "input", "invalid_type"},
		{`{"model":"openai/m","input":"x","dimensions":0}`, "dimensions", "invalid_value"},
		{`{"model":"openai/m","input":"x","dimensions":-3}`, "dimensions", "invalid_value"},
		{`{"model":"openai/m","input":"x","dimensions":1.5}`, "dimensions", "invalid_type"},
		{`{"model":"openai/m","input":"x","dimensions":"8"}`, "dimensions", "invalid_type"},
		{`{"model":"openai/m","input":"x","encoding_format":"int8"}`, "encoding_format", "invalid_value"},
		{`{"model":"openai/m","input":"x","encoding_format":2}`, "encoding_format", "invalid_type"},
		{`{"model":"openai/m","input":"x","user":2}`, "user", "invalid_type"},
		{`{"model":"openai/m","input":"x","input_type":"query"}`, "input_type", "unsupported_parameter"},
	} {
		_, err := s.ParseEmbeddings([]byte(tc.body))
		var e *apperr.Error
		if !errors.As(err, &e) || e.Kind != apperr.Invalid || e.Param != tc.param || e.Code != tc.code || e.Error() == "" {
			t.Errorf("%s: %#v, want param %q code %q", tc.body, err, tc.param, tc.code)
		}
	}
}

// Ensure Embed answers OpenAI's list, floats or base64 as asked, the model in the client's
// form, and the AI service's refusals with OpenAI's parameter names.
func TestEmbed(t *testing.T) {
	t.Parallel()
	s, fakes := newEmbedService(t)
	for _, tc := range []struct {
		body, provider, model string
		dims                  int
		tokens                int64
	}{
		{`{"model":"openai/text-embedding-3-small","input":["hello world","a b c"]}`, "openai", "openai/text-embedding-3-small", 8, 5},
		{`{"model":"text-embedding-3-small","input":["hello world","a b c"],"encoding_format":"base64","dimensions":3}`, "openai", "text-embedding-3-small", 3, 5},
		{`{"model":"gemini/gemini-embedding-001","input":["hello world","a b c"],"encoding_format":"base64"}`, "gemini", "gemini/gemini-embedding-001", 8, 3 + 2},
		{`{"model":"gemini/gemini-embedding-001","input":["hello world","a b c"],"dimensions":2}`, "gemini", "gemini/gemini-embedding-001", 2, 3 + 2},
	} {
		req, err := s.ParseEmbeddings([]byte(tc.body))
		if err != nil {
			t.Fatal(err)
		}
		list, err := s.Embed(context.Background(), "u", req)
		if err != nil {
			t.Fatalf("%s: %v", tc.body, err)
		}
		if list.Object != "list" || list.Model != tc.model || len(list.Data) != 2 || list.Usage != (EmbeddingsUsage{tc.tokens, tc.tokens}) {
			t.Fatalf("%s: %+v", tc.body, list)
		}
		for i, text := range []string{"hello world", "a b c"} {
			want := aitest.EmbeddingVector(text, tc.dims)
			var got any = want
			if req.Base64 {
				got = ai.EncodeBase64(want)
			}
			if d := list.Data[i]; d.Object != "embedding" || d.Index != i || !cmp.Equal(d.Embedding, got) {
				t.Fatalf("%s: data[%d] %+v, want %v", tc.body, i, d, got)
			}
		}
		if fakes[tc.provider].Last().Model() != strings.TrimPrefix(req.Model, tc.provider+"/") {
			t.Fatalf("%s: sent %s", tc.body, fakes[tc.provider].Last())
		}
	}
	before := len(fakes["gemini"].Calls())
	req, err := s.ParseEmbeddings([]byte(`{"model":"gemini/m","input":[` + `"x"` + strings.Repeat(`,"x"`, ai.GeminiEmbedBatch) + `]}`))
	if err != nil {
		t.Fatal(err)
	}
	list, err := s.Embed(context.Background(), "u", req)
	if err != nil || len(list.Data) != ai.GeminiEmbedBatch+1 || list.Data[ai.GeminiEmbedBatch].Index != ai.GeminiEmbedBatch {
		t.Fatalf("gemini past its batch: %v", err)
	}
	if n := len(fakes["gemini"].Calls()) - before; n != 2 {
		t.Fatalf("gemini past its batch: %d calls", n)
	}
	if n := len(fakes["anthropic"].Calls()); n != 0 {
		t.Fatalf("anthropic received %d requests", n)
	}
}

// Ensure /v1/chat/completions refuses an embedding model before anything is sent, and still
// routes chat models, priced or not.
func TestParseChatRefusesEmbeddingModels(t *testing.T) {
	t.Parallel()
	s, _ := newEmbedService(t)
	const msgs = `,"messages":[{"role":"user","content":"hi"}]}`
	for _, model := range []string{"text-embedding-3-small", "openai/text-embedding-3-large", "gemini/gemini-embedding-001", "gemini-embedding-001"} {
		_, err := s.Parse([]byte(`{"model":"` + model + `"` + msgs))
		if e := apperr.As(err); e == nil || e.Kind != apperr.Invalid || e.Param != "model" || !strings.Contains(e.Error(), "/v1/embeddings") {
			t.Errorf("%s: %v", model, err)
		}
	}
	for _, model := range []string{"gpt-4o-mini", "openai/gpt-4o-mini", "openai/unpriced", "gemini/gemini-2.5-flash"} {
		if _, err := s.Parse([]byte(`{"model":"` + model + `"` + msgs)); err != nil {
			t.Errorf("%s: %v", model, err)
		}
	}
}

// FuzzParseEmbeddings: any body is parsed or refused as Invalid, never a panic, and what is
// parsed passes the bounds the AI service enforces.
func FuzzParseEmbeddings(f *testing.F) {
	for _, seed := range []string{
		`{"model":"openai/text-embedding-3-small","input":"hi"}`,
		`{"model":"gemini/gemini-embedding-001","input":["a","b"],"dimensions":8,"encoding_format":"base64"}`,
		`{"model":"text-embedding-3-small","input":[[1,2],[3]],"user":"u"}`,
		`{"model":"openai/m","input":[1,2,3]}`,
		`{"model":"anthropic/x","input":"x"}`,
		`{"model":"openai/m","input":[[],[1]]}`,
		`{"model":"openai/m","input":["a",null]}`,
		`{"model":null,"input":null}`,
		`not json`,
	} {
		f.Add([]byte(seed))
	}
	prices, err := ai.LoadPrices("", nil)
	if err != nil {
		f.Fatal(err)
	}
	s := New(Options{Prices: prices})
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := s.ParseEmbeddings(body)
		if err != nil {
			if e := apperr.As(err); e == nil || e.Kind != apperr.Invalid {
				t.Fatalf("%s: %v is not Invalid", body, err)
			}
			return
		}
		in := req.Input
		n := len(in.Texts) + len(in.Tokens)
		if (in.Texts == nil) == (in.Tokens == nil) || n == 0 || n > ai.MaxEmbedInputs || req.Provider == "anthropic" ||
			req.Provider == "gemini" && in.Tokens != nil || in.Model == "" {
			t.Fatalf("%s parsed to %+v", body, req)
		}
		for _, text := range in.Texts {
			if text == "" {
				t.Fatalf("%s: an empty text passed", body)
			}
		}
		for _, toks := range in.Tokens {
			if len(toks) == 0 {
				t.Fatalf("%s: an empty token array passed", body)
			}
		}
		if d := in.Dimensions; d != nil && (*d < 1 || *d > ai.MaxEmbedDimensions) {
			t.Fatalf("%s: dimensions %d passed", body, *d)
		}
		if _, err := json.Marshal(req); err != nil {
			t.Fatal(err)
		}
	})
}

func dims(n int) *int { return &n }
