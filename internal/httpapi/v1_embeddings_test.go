package httpapi

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/acme/app/internal/ai"
	"github.com/acme/app/internal/ai/aitest"
	"github.com/acme/app/internal/gateway"
	"github.com/acme/app/internal/keys"
	"github.com/acme/app/internal/usage"
)

// embeddingList is the answer as a client decodes it: each embedding floats or a string.
type embeddingList struct {
	Object string `json:"object"`
	Data   []struct {
		Object    string `json:"object"`
		Index     int    `json:"index"`
		Embedding any    `json:"embedding"`
	} `json:"data"`
	Model string                  `json:"model"`
	Usage gateway.EmbeddingsUsage `json:"usage"`
}

// Ensure /v1/embeddings answers OpenAI's list for openai/, gemini/ and bare models, floats
// and base64, with a personal key or an access token, sends each provider its own format, and
// records each call with its cost like any AI call.
func TestV1Embeddings(t *testing.T) {
	t.Parallel()
	fx := newGWFixture(t, Options{})
	_, tok := fx.user(t)
	rec := do(fx.h, "POST", "/api/keys", `{"name":"embed"}`, tok)
	if rec.Code != 201 {
		t.Fatalf("key: %d %s", rec.Code, rec.Body)
	}
	key := decodeJSON[keys.Created](t, rec.Body.Bytes()).Key
	texts := []string{"hello world", "a second text here"}
	for _, tc := range []struct {
		name, body, provider, sentModel, model, path string
		base64                                       bool
		tokens                                       int64
		credential                                   string
	}{
		{"openai, floats", `{"model":"openai/text-embedding-3-small","input":["hello world","a second text here"]}`,
			"openai", "text-embedding-3-small", "openai/text-embedding-3-small", "/v1/embeddings", false, 6, key},
		{"openai, base64", `{"model":"openai/text-embedding-3-small","input":["hello world","a second text here"],"encoding_format":"base64"}`,
			"openai", "text-embedding-3-small", "openai/text-embedding-3-small", "/v1/embeddings", true, 6, tok},
		{"bare openai name", `{"model":"text-embedding-3-large","input":["hello world","a second text here"],"encoding_format":"float"}`,
			"openai", "text-embedding-3-large", "text-embedding-3-large", "/v1/embeddings", false, 6, key},
		{"gemini, floats", `{"model":"gemini/gemini-embedding-001","input":["hello world","a second text here"]}`,
			"gemini", "gemini-embedding-001", "gemini/gemini-embedding-001", "/v1beta/models/gemini-embedding-001:batchEmbedContents", false, 3 + 5, key},
		{"gemini, base64", `{"model":"gemini/gemini-embedding-001","input":["hello world","a second text here"],"encoding_format":"base64"}`,
			"gemini", "gemini-embedding-001", "gemini/gemini-embedding-001", "/v1beta/models/gemini-embedding-001:batchEmbedContents", true, 3 + 5, tok},
	} {
		rec := do(fx.h, "POST", "/v1/embeddings", tc.body, tc.credential)
		if rec.Code != 200 {
			t.Fatalf("%s: %d %s", tc.name, rec.Code, rec.Body)
		}
		got := decodeJSON[embeddingList](t, rec.Body.Bytes())
		if got.Object != "list" || got.Model != tc.model || len(got.Data) != 2 || got.Usage != (gateway.EmbeddingsUsage{PromptTokens: tc.tokens, TotalTokens: tc.tokens}) {
			t.Fatalf("%s: %s", tc.name, rec.Body)
		}
		for i, text := range texts {
			v := aitest.EmbeddingVector(text, 8)
			var want any
			if tc.base64 {
				want = ai.EncodeBase64(v)
			} else {
				floats := make([]any, len(v))
				for j, f := range v {
					floats[j] = float64(f)
				}
				want = floats
			}
			if d := got.Data[i]; d.Object != "embedding" || d.Index != i || !cmp.Equal(d.Embedding, want) {
				t.Fatalf("%s: data[%d] = %v, want %v", tc.name, i, d, want)
			}
		}
		call := fx.fakes[tc.provider].Last()
		if call.Path != tc.path || call.Model() != tc.sentModel {
			t.Fatalf("%s: the provider received %s", tc.name, call)
		}
		if tc.provider == "openai" && (call.Header.Get("Authorization") != "Bearer k-openai" || !cmp.Equal(call.Body["input"], []any{texts[0], texts[1]})) {
			t.Fatalf("%s: the provider received %s", tc.name, call)
		}
		if tc.provider == "gemini" && (call.Header.Get("X-Goog-Api-Key") != "k-gemini" || len(call.Body["requests"].([]any)) != 2) {
			t.Fatalf("%s: the provider received %s", tc.name, call)
		}
	}
	var sum usage.Summary
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline) && sum.TotalRequests < 5; time.Sleep(5 * time.Millisecond) {
		sum = decodeJSON[usage.Summary](t, do(fx.h, "GET", "/api/ai/usage?days=1", "", tok).Body.Bytes())
	}
	if sum.TotalRequests != 5 || sum.TotalTokens != 3*6+2*8 || sum.TotalCost <= 0 {
		t.Fatalf("usage after five embeddings calls: %+v", sum)
	}
}

// Ensure every refusal of /v1/embeddings is a 400 (or the middleware's status) in OpenAI's
// format naming the parameter, and nothing reaches a provider.
func TestV1EmbeddingsRefused(t *testing.T) {
	t.Parallel()
	fx := newGWFixture(t, Options{})
	_, tok := fx.user(t)
	spentTok := fx.spentUser(t)
	many := `"x"` + strings.Repeat(`,"x"`, ai.MaxEmbedInputs)
	for _, tc := range []struct {
		name, body, token string
		status            int
		code, param       string
	}{
		{"anthropic", `{"model":"anthropic/claude-haiku-4-5","input":"hello"}`, tok, 400, "model_not_supported", "model"},
		{"bare anthropic name", `{"model":"claude-haiku-4-5","input":"hello"}`, tok, 400, "model_not_supported", "model"},
		{"a chat model", `{"model":"gpt-4o-mini","input":"hello"}`, tok, 400, "invalid_value", "model"},
		{"no input", `{"model":"openai/text-embedding-3-small"}`, tok, 400, "", "input"},
		{"an empty text", `{"model":"openai/text-embedding-3-small","input":["a",""]}`, tok, 400, "invalid_value", "input[1]"},
		{"too many inputs", `{"model":"openai/text-embedding-3-small","input":[` + many + `]}`, tok, 400, "invalid_value", "input"},
		{"gemini tokens", `{"model":"gemini/gemini-embedding-001","input":[[1,2]]}`, tok, 400, "invalid_type", "input"},
		{"dimensions 0", `{"model":"openai/text-embedding-3-small","input":"x","dimensions":0}`, tok, 400, "invalid_value", "dimensions"},
		{"dimensions not an integer", `{"model":"openai/text-embedding-3-small","input":"x","dimensions":2.5}`, tok, 400, "invalid_type", "dimensions"},
		{"an unknown parameter", `{"model":"openai/text-embedding-3-small","input":"x","task_type":"q"}`, tok, 400, "unsupported_parameter", "task_type"},
		{"malformed JSON", `{"model":`, tok, 400, "", ""},
		{"no credential", `{"model":"openai/text-embedding-3-small","input":"x"}`, "", 401, "invalid_api_key", ""},
		{"spent budget", `{"model":"openai/text-embedding-3-small","input":"x"}`, spentTok, 429, "insufficient_quota", ""},
	} {
		rec := do(fx.h, "POST", "/v1/embeddings", tc.body, tc.token)
		e := openAIErr(t, rec, rec.Body.Bytes())
		param := ""
		if e.Param != nil {
			param = *e.Param
		}
		if rec.Code != tc.status || code(e) != tc.code || param != tc.param {
			t.Errorf("%s: %d %s", tc.name, rec.Code, rec.Body)
		}
	}
	for p, f := range fx.fakes {
		if n := len(f.Calls()); n != 0 {
			t.Errorf("%s received %d requests", p, n)
		}
	}
}

// Ensure a provider's answer of the wrong shape is a 502 in OpenAI's format, and the
// provider's refusal a 400 with its message, never with the provider's key. One fixture: the
// fake answers by the input it is sent.
func TestV1EmbeddingsUpstream(t *testing.T) {
	t.Parallel()
	answers := map[string]aitest.Responder{
		"strings":  aitest.JSON(200, `{"data":[{"index":0,"embedding":["a"]}],"usage":{"prompt_tokens":1,"total_tokens":1}}`),
		"too few":  aitest.JSON(200, `{"data":[],"usage":{"prompt_tokens":1,"total_tokens":1}}`),
		"not JSON": aitest.JSON(200, `<html>`),
		"refused":  aitest.Error("openai", 400, "invalid_request_error", "This model does not support specifying dimensions."),
	}
	fx := newGWFixture(t, Options{}, func(w http.ResponseWriter, r *http.Request, c aitest.Call) {
		input, _ := c.Body["input"].(string)
		answers[input](w, r, c)
	})
	_, tok := fx.user(t)
	for _, tc := range []struct {
		input  string
		status int
		want   string
	}{
		{"strings", 502, "not an array of numbers"},
		{"too few", 502, "0 embeddings for 1 inputs"},
		{"not JSON", 502, "not valid JSON"},
		{"refused", 400, "does not support"},
	} {
		rec := do(fx.h, "POST", "/v1/embeddings", `{"model":"openai/text-embedding-3-small","input":"`+tc.input+`"}`, tok)
		e := openAIErr(t, rec, rec.Body.Bytes())
		if rec.Code != tc.status || !strings.Contains(e.Message, tc.want) || strings.Contains(rec.Body.String(), "k-openai") {
			t.Errorf("%s: %d %s", tc.input, rec.Code, rec.Body)
		}
	}
}

// Ensure OpenAI's refusal of an embeddings request keeps OpenAI's code when it describes the
// caller's request (bounded to a short identifier), and never when it is about the server's
// key or account: those are not the caller's to fix and are not shown as if they were.
func TestV1EmbeddingsProviderCode(t *testing.T) {
	t.Parallel()
	refusal := func(status int, code string) aitest.Responder {
		return aitest.JSON(status, `{"error":{"message":"Refused.","type":"invalid_request_error","param":"input","code":`+code+`}}`)
	}
	tests := []struct {
		name       string
		fake       aitest.Responder
		wantStatus int
		want       gateway.ErrorObject
	}{
		{name: "RequestCodePassed", fake: refusal(400, `"context_length_exceeded"`),
			wantStatus: 400, want: gateway.ErrorObject{Type: "invalid_request_error", Param: ptr("input"), Code: ptr("context_length_exceeded")}},
		{name: "NoCode", fake: refusal(400, `null`),
			wantStatus: 400, want: gateway.ErrorObject{Type: "invalid_request_error", Param: ptr("input")}},
		{name: "OverlongCodeDropped", fake: refusal(400, `"`+strings.Repeat("c", 65)+`"`),
			wantStatus: 400, want: gateway.ErrorObject{Type: "invalid_request_error", Param: ptr("input")}},
		{name: "ServerKeyRefused", fake: refusal(401, `"invalid_api_key"`),
			wantStatus: 502, want: gateway.ErrorObject{Type: "server_error"}},
		{name: "ProjectCodeNotPassed", fake: refusal(400, `"project_model_access_denied"`),
			wantStatus: 400, want: gateway.ErrorObject{Type: "invalid_request_error", Param: ptr("input")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fx := newGWFixture(t, Options{}, tt.fake)
			_, tok := fx.user(t)
			rec := do(fx.h, "POST", "/v1/embeddings", `{"model":"openai/text-embedding-3-small","input":"hi"}`, tok)
			if got, want := rec.Code, tt.wantStatus; got != want {
				t.Fatalf("status=%d, want %d: %s", got, want, rec.Body)
			}
			got := openAIErr(t, rec, rec.Body.Bytes())
			got.Message = ""
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("error object (-want +got):\n%s\n%s", diff, rec.Body)
			}
		})
	}
}

// Ensure /v1/embeddings' requests and answers match docs/openapi.yaml.
func TestOpenAPI_EmbeddingsMatchTheDescription(t *testing.T) {
	t.Parallel()
	v := statusValidator(t)
	fx := newGWFixture(t, Options{})
	_, tok := fx.user(t)
	for _, tc := range []struct {
		body string
		want int
	}{
		{`{"model":"openai/text-embedding-3-small","input":"hello","encoding_format":"float","dimensions":4,"user":"u"}`, 200},
		{`{"model":"openai/text-embedding-3-small","input":["a","b"],"encoding_format":"base64"}`, 200},
		{`{"model":"openai/text-embedding-3-small","input":[[1,2],[3]]}`, 200},
		{`{"model":"openai/text-embedding-3-small","input":[1,2,3]}`, 200},
		{`{"model":"gemini/gemini-embedding-001","input":["a","b"],"dimensions":null}`, 200},
		{`{"model":"anthropic/claude-haiku-4-5","input":"x"}`, 400},
		{`{"model":"openai/text-embedding-3-small","input":""}`, 400},
	} {
		req := httptest.NewRequest("POST", "/v1/embeddings", strings.NewReader(tc.body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+tok)
		rec := httptest.NewRecorder()
		fx.h.ServeHTTP(rec, req)
		if rec.Code != tc.want {
			t.Fatalf("%s: %d %s", tc.body, rec.Code, rec.Body)
		}
		if rec.Code == 200 {
			u, _ := url.Parse("http://localhost:3000/v1/embeddings")
			vreq := &http.Request{Method: "POST", URL: u, Header: req.Header, Host: u.Host,
				Body: httptest.NewRequest("POST", "/v1/embeddings", strings.NewReader(tc.body)).Body}
			if ok, errs := v.ValidateHttpRequest(vreq); !ok {
				for _, e := range errs {
					t.Errorf("%s: request: %s: %s", tc.body, e.Message, e.Reason)
				}
			}
		}
		validateAnswer(t, v, tc.body, req, rec)
	}
}
