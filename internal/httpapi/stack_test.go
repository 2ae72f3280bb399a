package httpapi_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/acme/app/internal/ai"
	"github.com/acme/app/internal/ai/aitest"
	"github.com/acme/app/internal/auth"
	"github.com/acme/app/internal/dbcheck"
	"github.com/acme/app/internal/httpapi"
	"github.com/acme/app/internal/metrics"
	"github.com/acme/app/internal/store/storetest"
	"github.com/acme/app/internal/templates"
	"github.com/acme/app/internal/usage"
)

// stack is the whole API on real services: the embedded store, fake AI providers speaking
// their wire formats, and every route registered.
type stack struct {
	srv     *httptest.Server
	auth    *auth.Service
	metrics *metrics.Metrics
	appDB   string
	uri     string // the embedded store's URI (a MongoDB the storage routes may reach)
	fakes   map[string]*aitest.Server
}

func newStack(t *testing.T, opts httpapi.Options) *stack {
	t.Helper()
	ctx := context.Background()
	st := storetest.Store(t)
	db := storetest.DB(t)
	s := &stack{appDB: db.Name(), uri: st.URI(), fakes: map[string]*aitest.Server{}, metrics: metrics.New()}
	tokens := auth.NewTokens([]byte("stack-secret-stack-secret-stack-secret"), time.Hour)
	var err error
	if s.auth, err = auth.New(ctx, db, tokens, 4); err != nil {
		t.Fatal(err)
	}
	us := usage.New(db, usage.Options{Recorder: usage.RecorderOptions{FlushInterval: time.Millisecond}})
	t.Cleanup(func() { _ = us.Close(context.Background()) })
	cfg := map[string]ai.ProviderConfig{}
	for _, p := range ai.Providers() {
		s.fakes[p] = aitest.New(t, p, answerOrStream)
		cfg[p] = ai.ProviderConfig{APIKey: "k-" + p, BaseURL: s.fakes[p].BaseURL(), DefaultModel: "m-" + p}
	}
	aiSvc := ai.New(ai.Options{Providers: cfg, Timeout: 5 * time.Second, Recorder: us})
	dbc, err := dbcheck.New(dbcheck.Options{AllowedHosts: []string{"127.0.0.1"}, Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = dbc.Close(context.Background()) })
	// Core is up here: its timeout only has to outlast a slow machine (the race detector, the
	// package's tests in parallel), never to be met.
	tpl := templates.New(templates.Options{Spaces: st.Client(), AppDatabase: db.Name(), Core: st.Client(),
		CoreDatabase: storetest.DBName(t), CoreTimeout: 15 * time.Second})
	if opts.RateLimit == 0 {
		opts.RateLimit, opts.RateWindow = 1<<20, time.Minute
	}
	if opts.AuthRateLimit == 0 {
		opts.AuthRateLimit, opts.AuthRateWindow = 1<<20, time.Minute
	}
	opts.Metrics = s.metrics
	s.srv = httptest.NewServer(httpapi.NewServer(opts, httpapi.Deps{DB: st, Tokens: tokens, Auth: s.auth, AI: aiSvc,
		Usage: us, DBCheck: dbc, Templates: tpl}))
	t.Cleanup(s.srv.Close)
	return s
}

// answerOrStream answers a provider call as the provider does: a stream when one was asked
// for (OpenAI and Anthropic "stream": true, Gemini's streamGenerateContent), else a completion.
func answerOrStream(w http.ResponseWriter, r *http.Request, c aitest.Call) {
	if c.Body["stream"] == true || strings.Contains(r.URL.Path, "streamGenerateContent") {
		aitest.Stream(aitest.StreamOptions{})(w, r, c)
		return
	}
	aitest.OK("")(w, r, c)
}

// exchange is one request and its answer, bodies kept.
type exchange struct {
	method, path string
	reqBody      []byte
	reqHeader    http.Header
	status       int
	header       http.Header
	body         []byte
}

// do sends a request (body may be nil) with the given headers and keeps both bodies.
func (s *stack) do(t *testing.T, method, path string, body []byte, header map[string]string) exchange {
	t.Helper()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, s.srv.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := s.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return exchange{method: method, path: path, reqBody: body, reqHeader: req.Header, status: resp.StatusCode, header: resp.Header, body: b}
}

func bearer(token string) map[string]string {
	return map[string]string{"Authorization": "Bearer " + token}
}

// httpapiOptions are the options of a stack whose limits stay out of the way.
func httpapiOptions() httpapi.Options { return httpapi.Options{} }
