package httpapi

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/pb33f/libopenapi"
	"github.com/pb33f/libopenapi-validator/schema_validation"

	"github.com/acme/app/docs"
	"github.com/acme/app/internal/ai"
	"github.com/acme/app/internal/ai/aitest"
)

// componentValidator returns a check of a JSON document against a schema of
// docs/openapi.yaml's components, for what no operation can name (the events of a stream).
func componentValidator(t *testing.T, name string) func(doc []byte) []string {
	t.Helper()
	doc, err := libopenapi.NewDocument(docs.OpenAPI)
	if err != nil {
		t.Fatal(err)
	}
	model, err := doc.BuildV3Model()
	if err != nil {
		t.Fatal(err)
	}
	proxy := model.Model.Components.Schemas.GetOrZero(name)
	if proxy == nil {
		t.Fatalf("docs/openapi.yaml has no schema %s", name)
	}
	schema := proxy.Schema()
	sv := schema_validation.NewSchemaValidator()
	return func(b []byte) []string {
		ok, errs := sv.ValidateSchemaBytesWithVersion(schema, b, 3.1)
		if ok {
			return nil
		}
		var out []string
		for _, e := range errs {
			out = append(out, e.Message+": "+e.Reason)
			for _, se := range e.SchemaValidationErrors {
				out = append(out, se.Reason+" at "+se.FieldPath)
			}
		}
		return out
	}
}

// answerOrStreamFake answers a provider call as the provider does: a stream when one was
// asked for, else a completion.
func answerOrStreamFake(w http.ResponseWriter, r *http.Request, c aitest.Call) {
	if c.Body["stream"] == true || strings.Contains(r.URL.Path, "streamGenerateContent") {
		aitest.Stream(aitest.StreamOptions{})(w, r, c)
		return
	}
	aitest.OK("")(w, r, c)
}

// Ensure the answers the main flows of /api's flows test does not reach (the OpenAI-compatible
// /v1, personal API keys, the budget, the health checks) match docs/openapi.yaml: requests and
// answers through the validator, each event of a /v1 stream against V1ChatCompletionChunk.
func TestOpenAPI_GatewayAndKeysMatchTheDescription(t *testing.T) {
	t.Parallel()
	v := statusValidator(t)
	chunkErrs := componentValidator(t, "V1ChatCompletionChunk")
	if chunkErrs([]byte(`{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"m","choices":[],"usage":null}`)) == nil {
		t.Fatal("the chunk schema accepts a chat.completion: the stream's check would prove nothing")
	}
	fx := newGWFixture(t, Options{}, answerOrStreamFake)
	_, tok := fx.user(t)

	exchange := func(method, path, body, token string, want int) *httptest.ResponseRecorder {
		t.Helper()
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		rec := httptest.NewRecorder()
		fx.h.ServeHTTP(rec, req)
		if rec.Code != want {
			t.Fatalf("%s %s = %d %s, want %d", method, path, rec.Code, rec.Body, want)
		}
		if rec.Code < 400 {
			u, _ := url.Parse("http://localhost:3000" + path)
			vreq := &http.Request{Method: method, URL: u, Header: req.Header, Host: u.Host,
				Body: httptest.NewRequest(method, path, strings.NewReader(body)).Body}
			if ok, errs := v.ValidateHttpRequest(vreq); !ok {
				for _, e := range errs {
					t.Errorf("%s %s: request: %s: %s", method, path, e.Message, e.Reason)
				}
			}
		}
		validateAnswer(t, v, method+" "+path, req, rec)
		return rec
	}

	exchange("GET", "/api/health", "", "", 200)
	exchange("GET", "/api/", "", "", 200)

	// Keys: created without an expiry, listed (with the owner's e-mail), used, revoked.
	created := decodeJSON[struct{ ID, Key string }](t, exchange("POST", "/api/keys", `{"name":"ci","expiresInDays":null}`, tok, 201).Body.Bytes())
	exchange("POST", "/api/keys", `{"name":"ci","expiresInDays":30}`, tok, 201)
	exchange("GET", "/api/keys", "", tok, 200)
	exchange("GET", "/api/ai/budget", "", created.Key, 200)

	// /v1: each provider, streamed or not, the model list and one model, and errors.
	for _, p := range ai.Providers() {
		exchange("POST", "/v1/chat/completions", `{"model":"`+p+`/m","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"hi"}],"max_tokens":20,"n":1,"user":"u1"}`, created.Key, 200)
		rec := exchange("POST", "/v1/chat/completions", `{"model":"`+p+`/m","messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}],"stream":true,"stream_options":{"include_usage":true}}`, created.Key, 200)
		data := readSSE(t, rec.Body.String())
		if len(data) < 3 || data[len(data)-1] != "[DONE]" {
			t.Fatalf("%s: stream %q", p, data)
		}
		for _, d := range data[:len(data)-1] {
			if errs := chunkErrs([]byte(d)); errs != nil {
				t.Errorf("%s: chunk %s: %v", p, d, errs)
			}
		}
	}
	exchange("GET", "/v1/models", "", created.Key, 200)
	exchange("GET", "/v1/models/openai/m-openai", "", created.Key, 200)
	exchange("GET", "/v1/models/openai%2Fm-openai", "", created.Key, 200) // as the SDKs send models.retrieve
	exchange("GET", "/v1/models/openai/no-such-model", "", created.Key, 404)
	exchange("POST", "/v1/chat/completions", `{"model":"openai/m","messages":[{"role":"user","content":"hi"}],"n":2}`, created.Key, 400)
	exchange("POST", "/v1/chat/completions", `{"model":"openai/m","messages":[{"role":"user","content":"hi"}]}`, "sk-app-"+strings.Repeat("0", 43), 401)

	exchange("DELETE", "/api/keys/"+created.ID, "", tok, 204)
	exchange("DELETE", "/api/keys/"+created.ID, "", tok, 404)
	exchange("GET", "/v1/models", "", created.Key, 401)
}
