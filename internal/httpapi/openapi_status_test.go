package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"github.com/pb33f/libopenapi-validator/config"

	"github.com/acme/app/docs"
	"github.com/acme/app/internal/admin"
	"github.com/acme/app/internal/ai"
	"github.com/acme/app/internal/apperr"
	"github.com/acme/app/internal/auth"
	"github.com/acme/app/internal/budget"
	"github.com/acme/app/internal/dbcheck"
	"github.com/acme/app/internal/gateway"
	"github.com/acme/app/internal/keys"
	"github.com/acme/app/internal/templates"
	"github.com/acme/app/internal/usage"
)

// routePatterns returns the patterns of routes.go as registered, every service present.
func routePatterns() []string {
	var got patterns
	deps := Deps{Tokens: auth.NewTokens([]byte("x"), 0), Auth: &auth.Service{}, AI: &ai.Service{}, Usage: &usage.Service{},
		DBCheck: &dbcheck.Service{}, Templates: &templates.Service{}, Keys: &keys.Service{}, Budget: &budget.Service{}, Admin: &admin.Service{},
		Gateway: &gateway.Service{}}
	addRoutes(&got, Options{}, deps, &rateLimiter{})
	return got
}

// examplePath fills a route pattern's wildcards with values its handler accepts, and returns
// the path the description names the operation by.
func examplePath(pattern string) (path, described string) {
	path = strings.TrimSuffix(pattern, "{$}")
	described = path
	for wildcard, value := range map[string]string{
		"{spaceId}": "65f000000000000000000001", "{templateId}": "colour", "{widgetType}": "color",
		"{id}": "28edcd18-d58d-47bc-a728-8c257b22eb53", "{provider}": "openai", "{model...}": "gpt-4o-mini",
		"{role}": "admin",
	} {
		path = strings.ReplaceAll(path, wildcard, value)
	}
	return path, strings.ReplaceAll(described, "...}", "}")
}

// describedStatuses returns, for each "METHOD /path" of docs/openapi.yaml, the statuses its
// operation lists.
func describedStatuses(t *testing.T) map[string][]string {
	t.Helper()
	raw, err := OpenAPIJSON(docs.OpenAPI)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for path, item := range doc.Paths {
		for method, op := range item {
			var o struct {
				Responses map[string]json.RawMessage `json:"responses"`
			}
			if json.Unmarshal(op, &o) != nil || o.Responses == nil {
				continue
			}
			for status := range o.Responses {
				out[strings.ToUpper(method)+" "+path] = append(out[strings.ToUpper(method)+" "+path], status)
			}
		}
	}
	return out
}

// statusValidator returns a validator of answers against docs/openapi.yaml.
func statusValidator(t *testing.T) validator.Validator {
	t.Helper()
	doc, err := libopenapi.NewDocument(docs.OpenAPI)
	if err != nil {
		t.Fatal(err)
	}
	v, errs := validator.NewValidator(doc, config.WithFormatAssertions())
	if len(errs) > 0 {
		t.Fatalf("validator: %v", errs)
	}
	return v
}

// probe is one way of calling a route that makes a part of its path answer: the middleware
// (authentication, role guard, body limit, header limit, rate limits, panic recovery) or the
// handler.
type probe struct {
	name string
	h    http.Handler
	// prepare sets the request's credentials, body and headers.
	prepare func(r *http.Request)
	repeat  int // requests sent; the last answer is checked (2: the second is over a limit of 1)
	// failuresOnly: only a failure's body is checked (the services are not set up, so what they
	// answer is no real answer).
	failuresOnly bool
}

// Ensure every status a route answers, whichever part of its path answers it (the middleware it
// passes through or its handler), is listed for its operation in docs/openapi.yaml, with a
// body of the schema listed there (the envelope on /api, OpenAI's error object on /v1). Each
// route is called as an anonymous client, as a user who is not an admin, with a body and a
// header block over the limits, past a rate limit of one request, and on services that panic.
func TestOpenAPI_EveryStatusIsDescribed(t *testing.T) {
	t.Parallel()
	v := statusValidator(t)
	described := describedStatuses(t)

	fx := newGWFixture(t, Options{MaxBodyBytes: 512, MaxHeaderBytes: 4 << 10})
	_, tok := fx.user(t)
	limited := newGWFixture(t, Options{RateLimit: 1, RateWindow: time.Minute, AuthRateLimit: 1, AuthRateWindow: time.Minute})
	_, limitedTok := limited.user(t)
	// Services that are present but not set up: a handler that reaches one panics, and the
	// recovery answers.
	tokens := auth.NewTokens(secret, time.Hour)
	broken := NewServer(Options{}, Deps{Tokens: tokens, Auth: &auth.Service{}, AI: &ai.Service{}, Usage: &usage.Service{},
		DBCheck: &dbcheck.Service{}, Templates: &templates.Service{}, Keys: &keys.Service{}, Budget: &budget.Service{}, Admin: &admin.Service{},
		Gateway: &gateway.Service{}, Accounts: trustClaims{}})
	// The account store failing: every protected route refuses.
	down := NewServer(Options{}, Deps{Tokens: tokens, Auth: &auth.Service{}, AI: &ai.Service{}, Usage: &usage.Service{},
		DBCheck: &dbcheck.Service{}, Templates: &templates.Service{}, Keys: &keys.Service{}, Budget: &budget.Service{}, Admin: &admin.Service{},
		Gateway: &gateway.Service{}, Accounts: storeDown{}})
	brokenTok, err := tokens.Issue(auth.Caller{ID: "6b03073cffce71a0a85a92b9", Email: "p@example.com", Roles: []string{"user", "admin"}})
	if err != nil {
		t.Fatal(err)
	}

	withBody := func(body string) func(*http.Request) {
		return func(r *http.Request) {
			r.Body = io.NopCloser(strings.NewReader(body))
			r.ContentLength = int64(len(body))
			r.Header.Set("Content-Type", "application/json")
		}
	}
	auth := func(token string, then func(*http.Request)) func(*http.Request) {
		return func(r *http.Request) {
			r.Header.Set("Authorization", "Bearer "+token)
			then(r)
		}
	}
	big := `{"name":"` + strings.Repeat("x", 1024) + `"}`
	// A body every route's validation accepts: the fields of each, the others ignored. The
	// connection string names a host the storage routes refuse (loopback).
	// /v1 names the provider in the model, and refuses fields OpenAI's API does not know.
	const valid = `{"email":"probe@example.com","password":"secret1","name":"probe",` +
		`"messages":[{"role":"user","content":"hi"}],"widgetType":"color","properties":[],` +
		`"connectionString":"mongodb://127.0.0.1:1/","database":"probe","collection":"c"}`
	validBody := func(r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/v1/") {
			withBody(`{"model":"openai/gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}`)(r)
			return
		}
		withBody(valid)(r)
	}
	probes := []probe{
		{name: "anonymous", h: fx.h, prepare: withBody(`{}`)},
		{name: "user", h: fx.h, prepare: auth(tok, withBody(`{}`))},
		{name: "user, valid body", h: fx.h, prepare: auth(tok, validBody)},
		{name: "body over the limit", h: fx.h, prepare: auth(tok, withBody(big))},
		{name: "header block over the limit", h: fx.h, prepare: auth(tok, func(r *http.Request) {
			withBody(`{}`)(r)
			r.Header.Set("X-Padding", strings.Repeat("x", 5<<10))
		})},
		{name: "over the rate limit", h: limited.h, prepare: auth(limitedTok, withBody(`{}`)), repeat: 2},
		{name: "account store down", h: down, prepare: auth(brokenTok, validBody), failuresOnly: true},
		{name: "panic", h: broken, prepare: auth(brokenTok, validBody), failuresOnly: true},
	}

	answered := map[string][]int{}
	for i, pattern := range routePatterns() {
		method, rest, _ := strings.Cut(pattern, " ")
		path, describedPath := examplePath(rest)
		op := method + " " + describedPath
		listed, ok := described[op]
		if !ok {
			t.Errorf("%s: no operation in docs/openapi.yaml", op)
			continue
		}
		for j, p := range probes {
			var rec *httptest.ResponseRecorder
			var req *http.Request
			for range max(p.repeat, 1) {
				req = httptest.NewRequest(method, path, nil)
				req.RemoteAddr = fmt.Sprintf("192.0.2.%d:%d", i+1, 1000+j) // each route and probe its own client
				p.prepare(req)
				rec = httptest.NewRecorder()
				p.h.ServeHTTP(rec, req)
			}
			status := strconv.Itoa(rec.Code)
			if !slices.Contains(answered[op], rec.Code) {
				answered[op] = append(answered[op], rec.Code)
			}
			if !slices.Contains(listed, status) {
				t.Errorf("%s (%s) answered %d, which docs/openapi.yaml does not list (it lists %v): %s",
					op, p.name, rec.Code, listed, rec.Body)
				continue
			}
			if !p.failuresOnly || rec.Code >= 400 {
				validateAnswer(t, v, op+" ("+p.name+")", req, rec)
			}
		}
	}
	// Every route is behind the header limit, the global rate limit and the panic recovery
	// (NewServer wraps the whole mux in them), whether or not a probe made it answer so.
	for op, listed := range described {
		for _, status := range []string{"429", "431", "500"} {
			if !slices.Contains(listed, status) {
				t.Errorf("%s does not list %s, which every route may answer", op, status)
			}
		}
	}
	for op, statuses := range answered {
		slices.Sort(statuses)
		t.Logf("%s answered %v", op, statuses)
	}
	// The probes reach every part of a route's path: a run that stopped doing so proves nothing.
	for _, want := range []struct {
		op     string
		status int
	}{
		{"POST /api/auth/login", 413}, {"POST /api/keys", 413}, {"GET /api/keys", 401}, {"GET /api/health", 431},
		{"POST /v1/chat/completions", 413}, {"GET /v1/models", 429}, {"POST /v1/chat/completions", 200},
		{"POST /api/ai/gemini/generate", 200},
		{"POST /api/spaces/{spaceId}/properties/migrate-templates-to-core", 403}, {"POST /api/auth/register", 500},
		{"POST /api/storage/mongodb/query", 403}, {"GET /api/keys", 503}, {"POST /api/auth/register", 201},
	} {
		if !slices.Contains(answered[want.op], want.status) {
			t.Errorf("%s never answered %d: the probes no longer reach that part of its path (%v)", want.op, want.status, answered[want.op])
		}
	}
}

// validateAnswer checks an answer's headers and body against the schema its status lists.
func validateAnswer(t *testing.T, v validator.Validator, name string, req *http.Request, rec *httptest.ResponseRecorder) {
	t.Helper()
	u, _ := url.Parse("http://localhost:3000" + req.URL.RequestURI())
	vreq := &http.Request{Method: req.Method, URL: u, Header: req.Header, Host: u.Host, Body: http.NoBody}
	resp := &http.Response{StatusCode: rec.Code, Header: rec.Header(), Body: io.NopCloser(bytes.NewReader(rec.Body.Bytes())), Request: vreq}
	if ok, errs := v.ValidateHttpResponse(vreq, resp); !ok {
		for _, e := range errs {
			t.Errorf("%s answered %d: %s: %s", name, rec.Code, e.Message, e.Reason)
			for _, se := range e.SchemaValidationErrors {
				t.Errorf("    %s at %s", se.Reason, se.FieldPath)
			}
		}
		t.Logf("answer: %s", rec.Body)
	}
}

// trustClaims resolves a token's caller to its claims, so that a server whose services are not
// set up still lets requests reach its handlers.
type trustClaims struct{}

func (trustClaims) Current(_ context.Context, id string) (auth.Caller, error) {
	return auth.Caller{ID: id, Roles: []string{"user", "admin"}}, nil
}

// storeDown is an account store that cannot answer.
type storeDown struct{}

func (storeDown) Current(context.Context, string) (auth.Caller, error) {
	return auth.Caller{}, apperr.Wrap(apperr.Unavailable, errors.New("store down"), "Service Unavailable")
}

// Ensure a model name with slashes is served in both forms, and that the form the description
// gives (each slash as %2F) is a request and an answer it accepts.
func TestOpenAPI_ModelNamesWithSlashes(t *testing.T) {
	t.Parallel()
	v := statusValidator(t)
	prices, err := ai.LoadPrices("", nil)
	if err != nil {
		t.Fatal(err)
	}
	tokens := auth.NewTokens(secret, time.Hour)
	gw := gateway.New(gateway.Options{Prices: prices, Providers: map[string]string{"openai": "ft/my-model"}})
	h := NewServer(Options{}, Deps{Tokens: tokens, Gateway: gw, Accounts: trustClaims{}})
	tok, err := tokens.Issue(auth.Caller{ID: "6b03073cffce71a0a85a92b9"})
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/v1/models/openai/ft%2Fmy-model", "/v1/models/openai/ft/my-model"} {
		req := httptest.NewRequest("GET", path, nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if m := decodeJSON[gateway.Model](t, rec.Body.Bytes()); rec.Code != 200 || m.ID != "openai/ft/my-model" {
			t.Fatalf("GET %s = %d %s", path, rec.Code, rec.Body)
		}
		if strings.Contains(path, "%2F") {
			u, _ := url.Parse("http://localhost:3000" + path)
			vreq := &http.Request{Method: "GET", URL: u, Header: req.Header, Host: u.Host, Body: http.NoBody}
			if ok, errs := v.ValidateHttpRequest(vreq); !ok {
				for _, e := range errs {
					t.Errorf("GET %s: %s: %s", path, e.Message, e.Reason)
				}
			}
			validateAnswer(t, v, "GET "+path, req, rec)
		}
	}
}
