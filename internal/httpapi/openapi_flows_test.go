package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"github.com/pb33f/libopenapi-validator/config"

	"github.com/acme/app/docs"
)

// newValidator returns a validator of requests and answers against docs/openapi.yaml, after
// checking the description itself is a valid OpenAPI 3.1 document.
func newValidator(t *testing.T) validator.Validator {
	t.Helper()
	doc, err := libopenapi.NewDocument(docs.OpenAPI)
	if err != nil {
		t.Fatal(err)
	}
	v, errs := validator.NewValidator(doc, config.WithFormatAssertions())
	if len(errs) > 0 {
		t.Fatalf("validator: %v", errs)
	}
	if ok, verrs := v.ValidateDocument(); !ok {
		for _, e := range verrs {
			t.Errorf("docs/openapi.yaml: %s (%s)", e.Message, e.Reason)
		}
		t.FailNow()
	}
	return v
}

// check validates one exchange's answer against the description, and its request too unless
// the request is a deliberately bad one (an error answer is expected).
func check(t *testing.T, v validator.Validator, x exchange, wantStatus int) {
	t.Helper()
	if x.status != wantStatus {
		t.Fatalf("%s %s = %d %s, want %d", x.method, x.path, x.status, x.body, wantStatus)
	}
	u, _ := url.Parse("http://localhost:3000" + x.path)
	req := &http.Request{Method: x.method, URL: u, Header: x.reqHeader, Host: u.Host,
		Body: io.NopCloser(bytes.NewReader(x.reqBody))}
	resp := &http.Response{StatusCode: x.status, Header: x.header, Body: io.NopCloser(bytes.NewReader(x.body)), Request: req}
	validate := v.ValidateHttpRequestResponse
	if wantStatus >= 400 {
		validate = v.ValidateHttpResponse
	}
	if ok, errs := validate(req, resp); !ok {
		for _, e := range errs {
			t.Errorf("%s %s (%d): %s: %s", x.method, x.path, x.status, e.Message, e.Reason)
			for _, se := range e.SchemaValidationErrors {
				t.Errorf("    %s at %s", se.Reason, se.FieldPath)
			}
		}
		t.Logf("answer: %s", x.body)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Ensure the main flows' requests and answers, errors included, match their schemas in
// docs/openapi.yaml.
func TestOpenAPI_MainFlowsMatchTheDescription(t *testing.T) {
	t.Parallel()
	v := newValidator(t)
	s := newStack(t, httpapiOptions())
	ctx := context.Background()

	check(t, v, s.do(t, "GET", "/api", nil, nil), 200)
	// The first database check may outlast its 1 s bound on a loaded machine (the race
	// detector, the package's tests in parallel on one embedded store): this test is about the
	// answer's shape, so it waits for a healthy answer (the check is redone each second).
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if s.do(t, "GET", "/api/health", nil, nil).status == 200 {
			break
		}
	}
	check(t, v, s.do(t, "GET", "/api/health", nil, nil), 200)
	check(t, v, s.do(t, "GET", "/api/openapi.json", nil, nil), 200)

	// Accounts.
	reg := s.do(t, "POST", "/api/auth/register", []byte(`{"email":"flow@example.com","password":"secret1","name":"Flow"}`), nil)
	check(t, v, reg, 201)
	check(t, v, s.do(t, "POST", "/api/auth/register", []byte(`{"email":"flow@example.com","password":"secret1","name":"Flow"}`), nil), 409)
	check(t, v, s.do(t, "POST", "/api/auth/register", []byte(`{"email":"not-an-email","password":"1","name":""}`), nil), 400)
	check(t, v, s.do(t, "POST", "/api/auth/login", []byte(`{"email":"flow@example.com","password":"wrong-pass"}`), nil), 401)
	login := s.do(t, "POST", "/api/auth/login", []byte(`{"email":"FLOW@example.com","password":"secret1"}`), nil)
	check(t, v, login, 200)
	var res struct{ AccessToken string }
	if err := json.Unmarshal(login.body, &res); err != nil {
		t.Fatal(err)
	}
	tok := bearer(res.AccessToken)
	check(t, v, s.do(t, "GET", "/api/auth/profile", nil, tok), 200)
	check(t, v, s.do(t, "GET", "/api/auth/profile", nil, nil), 401)

	// AI and usage.
	chat := []byte(`{"messages":[{"role":"user","content":"Say hello"}],"maxTokens":16}`)
	check(t, v, s.do(t, "POST", "/api/ai/openai/chat", chat, tok), 200)
	check(t, v, s.do(t, "POST", "/api/ai/anthropic/messages", chat, tok), 200)
	check(t, v, s.do(t, "POST", "/api/ai/gemini/generate", chat, tok), 200)
	streamed := s.do(t, "POST", "/api/ai/openai/chat", []byte(`{"messages":[{"role":"user","content":"Say hello"}],"stream":true}`), tok)
	check(t, v, streamed, 200)
	if ct := streamed.header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("streamed answer Content-Type %q", ct)
	}
	check(t, v, s.do(t, "POST", "/api/ai/openai/chat", []byte(`{"messages":"nope"}`), tok), 400)
	check(t, v, s.do(t, "GET", "/api/ai/usage?days=7", nil, tok), 200)
	check(t, v, s.do(t, "GET", "/api/ai/usage/providers", nil, tok), 200)

	// Storage: the embedded store is the caller's MongoDB.
	check(t, v, s.do(t, "POST", "/api/storage/mongodb/test", mustJSON(t, map[string]any{"connectionString": s.uri, "database": s.appDB}), tok), 200)
	check(t, v, s.do(t, "POST", "/api/storage/mongodb/query", mustJSON(t, map[string]any{"connectionString": s.uri,
		"database": s.appDB, "collection": "users", "filter": map[string]any{}, "limit": 5}), tok), 200)
	check(t, v, s.do(t, "POST", "/api/storage/mongodb/query", []byte(`{"connectionString":5}`), tok), 400)

	// Templates: CRUD, then the admin routes.
	const base = "/api/spaces/65f000000000000000000001/properties"
	tpl := []byte(`{"id":"colour","name":"Colour picker","widgetType":"color","properties":[{"key":"default","type":"string","value":"#ff0000"}]}`)
	check(t, v, s.do(t, "POST", base+"/templates", tpl, tok), 201)
	check(t, v, s.do(t, "POST", base+"/templates", tpl, tok), 409)
	check(t, v, s.do(t, "GET", base+"/templates", nil, tok), 200)
	check(t, v, s.do(t, "GET", base+"/templates?widgetType=color", nil, tok), 200)
	check(t, v, s.do(t, "GET", base+"/templates/colour", nil, tok), 200)
	check(t, v, s.do(t, "GET", base+"/templates/widget/color", nil, tok), 200)
	check(t, v, s.do(t, "PUT", base+"/templates/colour", []byte(`{"name":"Colour picker v2","widgetType":"color","properties":[],"description":"v2"}`), tok), 200)
	check(t, v, s.do(t, "DELETE", base+"/templates/colour", nil, tok), 200)
	check(t, v, s.do(t, "GET", base+"/templates/colour", nil, tok), 404)
	check(t, v, s.do(t, "POST", base+"/migrate-templates-to-core", nil, tok), 403)
	if _, err := s.auth.Grant(ctx, "flow@example.com", "admin"); err != nil {
		t.Fatal(err)
	}
	check(t, v, s.do(t, "POST", base+"/migrate-templates-to-core?dryRun=true", nil, tok), 200)
	check(t, v, s.do(t, "DELETE", base+"/cleanup-space-templates?dryRun=true", nil, tok), 404)
}
