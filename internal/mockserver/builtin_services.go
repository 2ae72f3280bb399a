package mockserver

// The built-in mock's AI, usage, storage and template endpoints.
//
// Every answer is a contract type of the service package (ai.Completion, usage.Summary,
// usage.ProviderUsage, dbcheck.TestResult, dbcheck.QueryResult, templates.Template,
// templates.MigrationReport, templates.CleanupReport), and bodies are validated by the
// packages' own rules (ai.Service.Complete's validation, usage.ParseDays, dbcheck.ParseTest,
// ParseQuery, templates.DecodeInput), so the messages are identical to `app serve`'s.

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/acme/app/internal/ai"
	"github.com/acme/app/internal/apperr"
	"github.com/acme/app/internal/dbcheck"
	"github.com/acme/app/internal/templates"
	"github.com/acme/app/internal/usage"
	"github.com/acme/app/mock"
)

type addFunc func(key, about string, h mock.Handler)

// ---- AI ------------------------------------------------------------------------------------

// aiSpec is one AI endpoint of the built-in mock.
type aiSpec struct {
	provider, path, model string // model: the configuration's default for the provider
}

var aiSpecs = []aiSpec{
	{"openai", "/api/ai/openai/chat", "gpt-6-luna"},
	{"anthropic", "/api/ai/anthropic/messages", "claude-haiku-4-5"},
	{"gemini", "/api/ai/gemini/generate", "gemini-3.1-flash-lite"},
}

// aiChecker is an AI service with no provider configured: Complete validates the body with
// the real rules and messages, then stops with Unavailable before any network call. The
// built-in mock uses it as its validator, and its price table for the cost.
var aiChecker = sync.OnceValue(func() *ai.Service { return ai.New(ai.Options{MaxRetries: -1}) })

var aiPrices = sync.OnceValue(func() *ai.Prices {
	p, _ := ai.LoadPrices("", nil)
	return p
})

// usageRow is one recorded AI call of this mock.
type usageRow struct {
	user, provider, model string
	tokens                int64
	cost                  float64
	at                    time.Time
}

type usageLog struct {
	mu   sync.Mutex
	rows []usageRow
}

const maxUsageRows = 100000

func (u *usageLog) add(r usageRow) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.rows) >= maxUsageRows {
		u.rows = u.rows[1:]
	}
	u.rows = append(u.rows, r)
}

func (b *backend) addAI(add addFunc) {
	for _, s := range aiSpecs {
		add("POST "+s.path, "ai.Completion for "+s.provider, b.requireAuth(b.complete(s)))
	}
}

// complete answers a chat request with a made-up reply as an ai.Completion, and records it so
// the usage endpoints report it.
func (b *backend) complete(s aiSpec) mock.Handler {
	return func(ctx context.Context, req *mock.Request) (*mock.Response, error) {
		if _, bad := fields(req); bad != nil {
			return bad, nil
		}
		var in ai.ChatInput
		if err := json.Unmarshal(req.RawBody, &in); err != nil {
			return fail(http.StatusBadRequest, "request body must be a JSON object"), nil
		}
		if _, err := aiChecker().Complete(ctx, "", s.provider, in); apperr.KindOf(err) == apperr.Invalid {
			msgs := []string{"invalid body"}
			if e := apperr.As(err); e != nil {
				msgs = e.Messages
			}
			return fail(http.StatusBadRequest, msgs), nil
		}
		model := in.Model
		if model == "" {
			model = s.model
		}
		maxTokens := 1000
		if in.MaxTokens != nil {
			maxTokens = *in.MaxTokens
		}
		var prompt string
		for _, m := range in.Messages {
			if m.Role == "user" {
				prompt = m.Content
			}
		}
		short := prompt
		if len(short) > 60 {
			short = short[:60] + "…"
		}
		text := fmt.Sprintf("This is a mock reply from %s (%s) to: %q", s.provider, model, short)
		promptTok := int64(max(1, len(prompt)/4))
		outTok := int64(min(maxTokens, max(1, len(text)/4)))
		cost, _ := aiPrices().Cost(s.provider, model, ai.Tokens{Prompt: promptTok, Completion: outTok})
		c := ai.Completion{
			Text:      text,
			Usage:     ai.Usage{PromptTokens: promptTok, CompletionTokens: outTok, TotalTokens: promptTok + outTok},
			Model:     model,
			Provider:  s.provider,
			Cost:      cost,
			RequestID: b.gen.UUID(),
		}
		b.usage.add(usageRow{user: callerFrom(ctx).ID, provider: s.provider, model: model, tokens: c.Usage.TotalTokens, cost: c.Cost, at: time.Now()})
		return ok(http.StatusOK, c)
	}
}

// ---- usage ---------------------------------------------------------------------------------

func (b *backend) addUsage(add addFunc) {
	add("GET /api/ai/usage", "usage.Summary of the AI calls made to this mock", b.requireAuth(b.usageSummary))
	add("GET /api/ai/usage/providers", "[]usage.ProviderUsage of the AI calls made to this mock", b.requireAuth(b.usageProviders))
}

// errMessages returns the messages of an apperr error, or the error's text when it is not
// one.
func errMessages(err error) []string {
	if e := apperr.As(err); e != nil {
		return e.Messages
	}
	return []string{err.Error()}
}

// parseDays reads ?days= with usage.ParseDays: 1..366, default 30.
func parseDays(req *mock.Request) (int, *mock.Response) {
	n, err := usage.ParseDays(req.Query.Get("days"))
	if err != nil {
		return 0, fail(http.StatusBadRequest, errMessages(err))
	}
	return n, nil
}

func (b *backend) rowsFor(user string, days int) []usageRow {
	since := time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, -(days - 1))
	b.usage.mu.Lock()
	defer b.usage.mu.Unlock()
	var out []usageRow
	for _, r := range b.usage.rows {
		if r.user == user && !r.at.Before(since) {
			out = append(out, r)
		}
	}
	return out
}

func (b *backend) usageSummary(ctx context.Context, req *mock.Request) (*mock.Response, error) {
	days, bad := parseDays(req)
	if bad != nil {
		return bad, nil
	}
	var s usage.Summary
	for _, r := range b.rowsFor(callerFrom(ctx).ID, days) {
		s.TotalRequests++
		s.TotalTokens += r.tokens
		s.TotalCost += r.cost
	}
	s.TotalCost = math.Round(s.TotalCost*1e8) / 1e8
	return ok(http.StatusOK, s)
}

func (b *backend) usageProviders(ctx context.Context, req *mock.Request) (*mock.Response, error) {
	days, bad := parseDays(req)
	if bad != nil {
		return bad, nil
	}
	by := map[[2]string]*usage.ProviderUsage{}
	for _, r := range b.rowsFor(callerFrom(ctx).ID, days) {
		k := [2]string{r.provider, r.model}
		p := by[k]
		if p == nil {
			p = &usage.ProviderUsage{Provider: r.provider, Model: r.model}
			by[k] = p
		}
		p.RequestCount++
		p.TotalTokens += r.tokens
		p.Cost += r.cost
	}
	out := make([]usage.ProviderUsage, 0, len(by))
	for _, p := range by {
		p.Cost = math.Round(p.Cost*1e8) / 1e8
		out = append(out, *p)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Provider != out[j].Provider {
			return out[i].Provider < out[j].Provider
		}
		return out[i].Model < out[j].Model
	})
	return ok(http.StatusOK, out)
}

// ---- storage -------------------------------------------------------------------------------

// dbParser validates query bodies with the real service's rules (its default limits); it is
// never asked to connect anywhere.
var dbParser = sync.OnceValue(func() *dbcheck.Service {
	s, err := dbcheck.New(dbcheck.Options{})
	if err != nil {
		panic(err) // only a bad allow-list fails, and there is none
	}
	return s
})

func (b *backend) addStorage(add addFunc) {
	add("POST /api/storage/mongodb/test", "dbcheck.TestResult (no connection is made)", b.requireAuth(b.storageTest))
	add("POST /api/storage/mongodb/query", "dbcheck.QueryResult with generated documents", b.requireAuth(b.storageQuery))
}

func (b *backend) storageTest(_ context.Context, req *mock.Request) (*mock.Response, error) {
	f, bad := fields(req)
	if bad != nil {
		return bad, nil
	}
	in, msgs := dbcheck.ParseTest(f)
	if len(msgs) > 0 {
		return fail(http.StatusBadRequest, msgs), nil
	}
	return ok(http.StatusOK, dbcheck.TestResult{Success: true, ClusterName: "mock-cluster", Version: "7.0.14",
		Latency: float64(b.gen.Int(2, 40)), Databases: []string{"admin", in.Database, "local"}})
}

// refusedOps are the filter operators dbcheck refuses (server-side JavaScript).
var refusedOps = []string{"$where", "$function", "$accumulator"}

func (b *backend) storageQuery(_ context.Context, req *mock.Request) (*mock.Response, error) {
	f, bad := fields(req)
	if bad != nil {
		return bad, nil
	}
	in, msgs := dbParser().ParseQuery(f)
	for _, op := range refusedOps {
		msg := fmt.Sprintf("filter must not use the %s operator: server-side JavaScript is not allowed", op)
		if strings.Contains(string(in.Filter), `"`+op+`"`) && !slices.Contains(msgs, msg) {
			msgs = append(msgs, msg)
		}
	}
	if len(msgs) > 0 {
		return fail(http.StatusBadRequest, msgs), nil
	}
	limit := dbcheck.DefaultLimit
	if in.Limit != nil {
		limit = *in.Limit
	}
	n := min(limit, 5)
	docs := make([]json.RawMessage, 0, n)
	for range n {
		u := b.gen.User(mock.User{})
		d, _ := json.Marshal(map[string]any{"_id": objectID(), "name": u.Name, "email": u.Email, "role": u.Role, "createdAt": stamp(u.CreatedAt)})
		docs = append(docs, d)
	}
	return ok(http.StatusOK, dbcheck.QueryResult{Success: true, Documents: docs, Count: len(docs)})
}

// ---- templates -----------------------------------------------------------------------------

// sourceHeader tells whether a template read came from core (always, in this mock).
const sourceHeader = "X-Templates-Source"

// templateStore keeps the templates created through the mock, in memory, shared by every
// space (as the real core collection is).
type templateStore struct {
	mu    sync.Mutex
	byID  map[string]*templates.Template
	order []string
}

func props(js ...string) []templates.Value {
	out := make([]templates.Value, len(js))
	for i, j := range js {
		_ = out[i].UnmarshalJSON([]byte(j))
	}
	return out
}

func newTemplateStore() *templateStore {
	s := &templateStore{byID: map[string]*templates.Template{}}
	now := time.Now().UTC().Truncate(time.Millisecond)
	for _, t := range []templates.Template{
		{ID: "tpl-text", Name: "Text", WidgetType: "text", Properties: props(`{"key":"maxLength","type":"number","default":255}`)},
		{ID: "tpl-select", Name: "Select", WidgetType: "select", Properties: props(`{"key":"options","type":"array","default":["a","b"]}`)},
		{ID: "tpl-date", Name: "Date", WidgetType: "date", Properties: props(`{"key":"format","type":"string","default":"YYYY-MM-DD"}`)},
	} {
		t.CreatedAt, t.UpdatedAt = &now, &now
		s.put(&t)
	}
	return s
}

const maxTemplates = 10000

func (s *templateStore) put(t *templates.Template) bool {
	if _, exists := s.byID[t.ID]; !exists {
		if len(s.order) >= maxTemplates {
			return false
		}
		s.order = append(s.order, t.ID)
	}
	s.byID[t.ID] = t
	return true
}

func (s *templateStore) list() []templates.Template {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]templates.Template, 0, len(s.order))
	for _, id := range s.order {
		out = append(out, *s.byID[id])
	}
	return out
}

func (b *backend) addTemplates(add addFunc) {
	base := "/api/spaces/:spaceId/properties"
	add("GET "+base+"/templates", "[]templates.Template", b.requireAuth(b.tplList))
	add("POST "+base+"/templates", "templates.Template (201)", b.requireAuth(b.tplCreate))
	add("GET "+base+"/templates/widget/:widgetType", "templates.Template", b.requireAuth(b.tplForWidget))
	add("GET "+base+"/templates/:templateId", "templates.Template", b.requireAuth(b.tplGet))
	add("PUT "+base+"/templates/:templateId", "templates.Template", b.requireAuth(b.tplUpdate))
	add("DELETE "+base+"/templates/:templateId", "templates.Template", b.requireAuth(b.tplDelete))
	add("POST "+base+"/migrate-templates-to-core", "templates.MigrationReport (admin)", b.requireAdmin(b.tplMigrate))
	add("DELETE "+base+"/cleanup-space-templates", "templates.CleanupReport (admin)", b.requireAdmin(b.tplCleanup))
}

func withSource(r *mock.Response) *mock.Response {
	r.Headers = map[string]string{sourceHeader: string(templates.SourceCore)}
	return r
}

func tplNotFound(id string) *mock.Response {
	return fail(http.StatusNotFound, fmt.Sprintf("template %q not found", id))
}

func (b *backend) tplList(context.Context, *mock.Request) (*mock.Response, error) {
	return withSource(&mock.Response{Status: http.StatusOK, Data: b.tpl.list()}), nil
}

func (b *backend) tplGet(_ context.Context, req *mock.Request) (*mock.Response, error) {
	id := req.Params["templateId"]
	b.tpl.mu.Lock()
	t, found := b.tpl.byID[id]
	var c templates.Template
	if found {
		c = *t
	}
	b.tpl.mu.Unlock()
	if !found {
		return tplNotFound(id), nil
	}
	return withSource(&mock.Response{Status: http.StatusOK, Data: c}), nil
}

func (b *backend) tplForWidget(_ context.Context, req *mock.Request) (*mock.Response, error) {
	w := req.Params["widgetType"]
	for _, t := range b.tpl.list() {
		if t.WidgetType == w {
			return withSource(&mock.Response{Status: http.StatusOK, Data: t}), nil
		}
	}
	return fail(http.StatusNotFound, fmt.Sprintf("no template for widget type %q", w)), nil
}

// templateInput validates a create or update body with templates.DecodeInput.
func templateInput(req *mock.Request) (templates.Template, *mock.Response) {
	f, bad := fields(req)
	if bad != nil {
		return templates.Template{}, bad
	}
	in, err := templates.DecodeInput(f)
	if err != nil {
		return templates.Template{}, fail(http.StatusBadRequest, errMessages(err))
	}
	t := templates.Template{ID: in.ID, Name: in.Name, WidgetType: in.WidgetType, Properties: in.Properties}
	if in.Description != nil {
		t.Description = *in.Description
	}
	if t.Properties == nil {
		t.Properties = []templates.Value{}
	}
	return t, nil
}

func (b *backend) tplCreate(_ context.Context, req *mock.Request) (*mock.Response, error) {
	t, bad := templateInput(req)
	if bad != nil {
		return bad, nil
	}
	if t.ID == "" {
		t.ID = objectID()
	}
	now := time.Now().UTC().Truncate(time.Millisecond)
	t.CreatedAt, t.UpdatedAt = &now, &now
	b.tpl.mu.Lock()
	defer b.tpl.mu.Unlock()
	if _, exists := b.tpl.byID[t.ID]; exists {
		return fail(http.StatusConflict, fmt.Sprintf("template with id %q already exists", t.ID)), nil
	}
	if !b.tpl.put(&t) {
		return fail(http.StatusInsufficientStorage, "the mock holds too many templates"), nil
	}
	return withSource(&mock.Response{Status: http.StatusCreated, Data: t}), nil
}

func (b *backend) tplUpdate(_ context.Context, req *mock.Request) (*mock.Response, error) {
	t, bad := templateInput(req)
	if bad != nil {
		return bad, nil
	}
	id := req.Params["templateId"]
	b.tpl.mu.Lock()
	defer b.tpl.mu.Unlock()
	old, found := b.tpl.byID[id]
	if !found {
		return tplNotFound(id), nil
	}
	now := time.Now().UTC().Truncate(time.Millisecond)
	t.ID, t.CreatedAt, t.UpdatedAt = id, old.CreatedAt, &now
	b.tpl.put(&t)
	return withSource(&mock.Response{Status: http.StatusOK, Data: t}), nil
}

func (b *backend) tplDelete(_ context.Context, req *mock.Request) (*mock.Response, error) {
	id := req.Params["templateId"]
	b.tpl.mu.Lock()
	defer b.tpl.mu.Unlock()
	t, found := b.tpl.byID[id]
	if !found {
		return tplNotFound(id), nil
	}
	delete(b.tpl.byID, id)
	if i := slices.Index(b.tpl.order, id); i >= 0 {
		b.tpl.order = slices.Delete(b.tpl.order, i, i+1)
	}
	return withSource(&mock.Response{Status: http.StatusOK, Data: *t}), nil
}

// tplMigrate reports a plausible migration: every template is already in core (this mock
// has no space databases). dryRun defaults to true, the safe reading of an absent flag.
func (b *backend) tplMigrate(_ context.Context, req *mock.Request) (*mock.Response, error) {
	dry := true
	if v := req.Query.Get("dryRun"); v != "" {
		p, err := strconv.ParseBool(v)
		if err != nil {
			return fail(http.StatusBadRequest, []string{"dryRun must be a boolean value"}), nil
		}
		dry = p
	}
	n := len(b.tpl.list())
	return ok(http.StatusOK, templates.MigrationReport{DryRun: dry, SpacesScanned: 1, TemplatesFound: n, UniqueTemplates: n,
		AlreadyInCore: n, Conflicts: []templates.Conflict{}, Errors: []templates.SpaceError{}, DurationMs: int64(b.gen.Int(3, 30))})
}

func (b *backend) tplCleanup(_ context.Context, req *mock.Request) (*mock.Response, error) {
	return ok(http.StatusOK, templates.CleanupReport{SpaceID: req.Params["spaceId"], KeptNotInCore: []string{}})
}
