package mockserver

// The built-in mock's AI, usage, storage and template endpoints.
//
// The shapes below are local copies, field for field and tag for tag, of the contract types of
// internal/ai (Completion, Usage), internal/usage (Summary, ProviderUsage), internal/dbcheck
// (TestResult, QueryResult) and internal/templates (Template, MigrationReport, CleanupReport).
// Those packages were still on their branches when this file was written; when they are on
// main, each local type is replaced by the package's own (the tests decode the answers
// strictly, so a drift shows).

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/acme/app/mock"
)

type addFunc func(key, about string, h mock.Handler)

// ---- AI ------------------------------------------------------------------------------------

// aiUsage mirrors ai.Usage.
type aiUsage struct {
	PromptTokens     int64 `json:"promptTokens"`
	CompletionTokens int64 `json:"completionTokens"`
	TotalTokens      int64 `json:"totalTokens"`
}

// aiCompletion mirrors ai.Completion: the normalized answer of the three AI endpoints.
type aiCompletion struct {
	Text      string  `json:"text"`
	Usage     aiUsage `json:"usage"`
	Model     string  `json:"model"`
	Provider  string  `json:"provider"`
	Cost      float64 `json:"cost"`
	RequestID string  `json:"requestId"`
}

// aiSpec is one AI endpoint's rules (the seed's table).
type aiSpec struct {
	provider, path, model string
	roles                 []string
	maxTemperature        float64
	inPrice, outPrice     float64 // USD per million tokens, for a plausible cost
}

var aiSpecs = []aiSpec{
	{"openai", "/api/ai/openai/chat", "gpt-6-luna", []string{"user", "assistant", "system"}, 2, 0.15, 0.6},
	{"anthropic", "/api/ai/anthropic/messages", "claude-haiku-4-5", []string{"user", "assistant"}, 1, 1, 5},
	{"gemini", "/api/ai/gemini/generate", "gemini-3.1-flash-lite", []string{"user", "assistant"}, 2, 0.1, 0.4},
}

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

// validateChat checks a chat body with the AI service's class-validator wording.
func validateChat(f map[string]json.RawMessage, s aiSpec) (msgs []string, model string, prompt string, maxTokens int) {
	isNull := func(r json.RawMessage) bool { return r == nil || strings.TrimSpace(string(r)) == "null" }
	var items []json.RawMessage
	if raw := f["messages"]; isNull(raw) || json.Unmarshal(raw, &items) != nil {
		msgs = append(msgs, "messages should not be empty", "messages must be an array")
	} else if len(items) == 0 {
		msgs = append(msgs, "messages should not be empty")
	}
	for i, item := range items {
		var m map[string]json.RawMessage
		if json.Unmarshal(item, &m) != nil || m == nil {
			msgs = append(msgs, "each value in nested property messages must be either object or array")
			continue
		}
		var role, content string
		_ = json.Unmarshal(m["role"], &role)
		if !contains(s.roles, role) {
			msgs = append(msgs, fmt.Sprintf("messages.%d.role must be one of the following values: %s", i, strings.Join(s.roles, ", ")))
		}
		switch c := m["content"]; {
		case isNull(c):
			msgs = append(msgs, fmt.Sprintf("messages.%d.content should not be empty", i), fmt.Sprintf("messages.%d.content must be a string", i))
		case json.Unmarshal(c, &content) != nil:
			msgs = append(msgs, fmt.Sprintf("messages.%d.content must be a string", i))
		case content == "":
			msgs = append(msgs, fmt.Sprintf("messages.%d.content should not be empty", i))
		default:
			if role == "user" {
				prompt = content
			}
		}
	}
	model = s.model
	if raw := f["model"]; !isNull(raw) {
		if json.Unmarshal(raw, &model) != nil || model == "" {
			msgs = append(msgs, "model must be a string")
			model = s.model
		}
	}
	if raw := f["temperature"]; !isNull(raw) {
		var t float64
		if json.Unmarshal(raw, &t) != nil {
			msgs = append(msgs, "temperature must be a number conforming to the specified constraints")
		} else {
			if t < 0 {
				msgs = append(msgs, "temperature must not be less than 0")
			}
			if t > s.maxTemperature {
				msgs = append(msgs, "temperature must not be greater than "+strconv.FormatFloat(s.maxTemperature, 'f', -1, 64))
			}
		}
	}
	maxTokens = 1000
	if raw := f["maxTokens"]; !isNull(raw) {
		var n float64
		if json.Unmarshal(raw, &n) != nil || n != math.Trunc(n) {
			msgs = append(msgs, "maxTokens must be an integer number")
		} else if n < 1 {
			msgs = append(msgs, "maxTokens must not be less than 1")
		} else {
			maxTokens = int(min(n, 1e6))
		}
	}
	return msgs, model, prompt, maxTokens
}

// complete answers a chat request with a made-up reply in the normalized shape, and records
// it so the usage endpoints report it.
func (b *backend) complete(s aiSpec) mock.Handler {
	return func(ctx context.Context, req *mock.Request) (*mock.Response, error) {
		f, bad := fields(req)
		if bad != nil {
			return bad, nil
		}
		msgs, model, prompt, maxTokens := validateChat(f, s)
		if len(msgs) > 0 {
			return fail(http.StatusBadRequest, msgs), nil
		}
		short := prompt
		if len(short) > 60 {
			short = short[:60] + "…"
		}
		text := fmt.Sprintf("This is a mock reply from %s (%s) to: %q", s.provider, model, short)
		in := int64(max(1, len(prompt)/4))
		out := int64(min(maxTokens, max(1, len(text)/4)))
		c := aiCompletion{
			Text:      text,
			Usage:     aiUsage{PromptTokens: in, CompletionTokens: out, TotalTokens: in + out},
			Model:     model,
			Provider:  s.provider,
			Cost:      math.Round((float64(in)*s.inPrice+float64(out)*s.outPrice)/1e6*1e8) / 1e8,
			RequestID: b.gen.UUID(),
		}
		b.usage.add(usageRow{user: callerFrom(ctx).ID, provider: s.provider, model: model, tokens: c.Usage.TotalTokens, cost: c.Cost, at: time.Now()})
		return ok(http.StatusOK, c)
	}
}

// ---- usage ---------------------------------------------------------------------------------

// usageSummary mirrors usage.Summary.
type usageSummary struct {
	TotalRequests int64   `json:"totalRequests"`
	TotalTokens   int64   `json:"totalTokens"`
	TotalCost     float64 `json:"totalCost"`
}

// providerUsage mirrors usage.ProviderUsage.
type providerUsage struct {
	Provider     string  `json:"provider"`
	Model        string  `json:"model"`
	RequestCount int64   `json:"requestCount"`
	TotalTokens  int64   `json:"totalTokens"`
	Cost         float64 `json:"cost"`
}

func (b *backend) addUsage(add addFunc) {
	add("GET /api/ai/usage", "usage.Summary of the AI calls made to this mock", b.requireAuth(b.usageSummary))
	add("GET /api/ai/usage/providers", "[]usage.ProviderUsage of the AI calls made to this mock", b.requireAuth(b.usageProviders))
}

// parseDays reads ?days= as the usage service does: 1..366, default 30.
func parseDays(req *mock.Request) (int, *mock.Response) {
	s := req.Query.Get("days")
	if s == "" {
		return 30, nil
	}
	n, err := strconv.Atoi(s)
	switch {
	case err != nil:
		return 0, fail(http.StatusBadRequest, []string{"days must be an integer number"})
	case n < 1:
		return 0, fail(http.StatusBadRequest, []string{"days must not be less than 1"})
	case n > 366:
		return 0, fail(http.StatusBadRequest, []string{"days must not be greater than 366"})
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
	var s usageSummary
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
	by := map[[2]string]*providerUsage{}
	for _, r := range b.rowsFor(callerFrom(ctx).ID, days) {
		k := [2]string{r.provider, r.model}
		p := by[k]
		if p == nil {
			p = &providerUsage{Provider: r.provider, Model: r.model}
			by[k] = p
		}
		p.RequestCount++
		p.TotalTokens += r.tokens
		p.Cost += r.cost
	}
	out := make([]providerUsage, 0, len(by))
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

// dbTestResult mirrors dbcheck.TestResult (success case).
type dbTestResult struct {
	Success     bool     `json:"success"`
	ClusterName string   `json:"clusterName,omitempty"`
	Version     string   `json:"version,omitempty"`
	Latency     float64  `json:"latency"`
	Databases   []string `json:"databases,omitempty"`
	Error       string   `json:"error,omitempty"`
}

// dbQueryResult mirrors dbcheck.QueryResult.
type dbQueryResult struct {
	Success   bool              `json:"success"`
	Documents []json.RawMessage `json:"documents"`
	Count     int               `json:"count"`
	Truncated bool              `json:"truncated,omitempty"`
}

func (b *backend) addStorage(add addFunc) {
	add("POST /api/storage/mongodb/test", "dbcheck.TestResult (no connection is made)", b.requireAuth(b.storageTest))
	add("POST /api/storage/mongodb/query", "dbcheck.QueryResult with generated documents", b.requireAuth(b.storageQuery))
}

// storageFields checks the fields both storage endpoints share.
func storageFields(f map[string]json.RawMessage, names ...string) (map[string]string, []string) {
	var msgs []string
	out := map[string]string{}
	for _, n := range names {
		raw, has := f[n]
		var s string
		switch {
		case !has || strings.TrimSpace(string(raw)) == "null":
			msgs = append(msgs, n+" should not be empty", n+" must be a string")
		case json.Unmarshal(raw, &s) != nil:
			msgs = append(msgs, n+" must be a string")
		case s == "":
			msgs = append(msgs, n+" should not be empty")
		default:
			out[n] = s
		}
	}
	if cs, ok := out["connectionString"]; ok && !strings.HasPrefix(cs, "mongodb://") && !strings.HasPrefix(cs, "mongodb+srv://") {
		msgs = append(msgs, "connectionString must be a mongodb:// or mongodb+srv:// URI")
	}
	return out, msgs
}

func (b *backend) storageTest(_ context.Context, req *mock.Request) (*mock.Response, error) {
	f, bad := fields(req)
	if bad != nil {
		return bad, nil
	}
	v, msgs := storageFields(f, "connectionString", "database")
	if len(msgs) > 0 {
		return fail(http.StatusBadRequest, msgs), nil
	}
	return ok(http.StatusOK, dbTestResult{Success: true, ClusterName: "mock-cluster", Version: "7.0.14",
		Latency: float64(b.gen.Int(2, 40)), Databases: []string{"admin", v["database"], "local"}})
}

func (b *backend) storageQuery(_ context.Context, req *mock.Request) (*mock.Response, error) {
	f, bad := fields(req)
	if bad != nil {
		return bad, nil
	}
	_, msgs := storageFields(f, "connectionString", "database", "collection")
	if raw, has := f["filter"]; has && strings.TrimSpace(string(raw)) != "null" {
		var m map[string]any
		if json.Unmarshal(raw, &m) != nil {
			msgs = append(msgs, "filter must be an object")
		} else if strings.Contains(string(raw), `"$where"`) || strings.Contains(string(raw), `"$function"`) || strings.Contains(string(raw), `"$accumulator"`) {
			msgs = append(msgs, "filter must not use $where, $function or $accumulator")
		}
	}
	limit := 100
	if raw, has := f["limit"]; has && strings.TrimSpace(string(raw)) != "null" {
		var n float64
		switch {
		case json.Unmarshal(raw, &n) != nil || n != math.Trunc(n):
			msgs = append(msgs, "limit must be an integer number")
		case n < 1:
			msgs = append(msgs, "limit must not be less than 1")
		case n > 1000:
			msgs = append(msgs, "limit must not be greater than 1000")
		default:
			limit = int(n)
		}
	}
	if len(msgs) > 0 {
		return fail(http.StatusBadRequest, msgs), nil
	}
	n := min(limit, 5)
	docs := make([]json.RawMessage, 0, n)
	for range n {
		u := b.gen.User(mock.User{})
		d, _ := json.Marshal(map[string]any{"_id": objectID(), "name": u.Name, "email": u.Email, "role": u.Role, "createdAt": stamp(u.CreatedAt)})
		docs = append(docs, d)
	}
	return ok(http.StatusOK, dbQueryResult{Success: true, Documents: docs, Count: len(docs)})
}

// ---- templates -----------------------------------------------------------------------------

// propTemplate mirrors templates.Template.
type propTemplate struct {
	ID          string            `json:"id"`
	Name        string            `json:"name"`
	WidgetType  string            `json:"widgetType"`
	Properties  []json.RawMessage `json:"properties"`
	Description string            `json:"description,omitempty"`
	CreatedAt   *time.Time        `json:"createdAt,omitempty"`
	UpdatedAt   *time.Time        `json:"updatedAt,omitempty"`
}

// migrationReport mirrors templates.MigrationReport.
type migrationReport struct {
	DryRun          bool             `json:"dryRun"`
	SpacesScanned   int              `json:"spacesScanned"`
	TemplatesFound  int              `json:"templatesFound"`
	UniqueTemplates int              `json:"uniqueTemplates"`
	Migrated        int              `json:"migrated"`
	AlreadyInCore   int              `json:"alreadyInCore"`
	Conflicts       []map[string]any `json:"conflicts"`
	Errors          []map[string]any `json:"errors"`
	DurationMs      int64            `json:"durationMs"`
}

// cleanupReport mirrors templates.CleanupReport.
type cleanupReport struct {
	SpaceID       string   `json:"spaceId"`
	DryRun        bool     `json:"dryRun"`
	Deleted       int      `json:"deleted"`
	KeptNotInCore []string `json:"keptNotInCore"`
}

// sourceHeader tells whether a template read came from core (always, in this mock).
const sourceHeader = "X-Templates-Source"

// templateStore keeps the templates created through the mock, in memory, shared by every
// space (as the real core collection is).
type templateStore struct {
	mu    sync.Mutex
	byID  map[string]*propTemplate
	order []string
}

func newTemplateStore() *templateStore {
	s := &templateStore{byID: map[string]*propTemplate{}}
	now := time.Now().UTC().Truncate(time.Millisecond)
	for _, t := range []propTemplate{
		{ID: "tpl-text", Name: "Text", WidgetType: "text", Properties: []json.RawMessage{json.RawMessage(`{"key":"maxLength","type":"number","default":255}`)}},
		{ID: "tpl-select", Name: "Select", WidgetType: "select", Properties: []json.RawMessage{json.RawMessage(`{"key":"options","type":"array","default":["a","b"]}`)}},
		{ID: "tpl-date", Name: "Date", WidgetType: "date", Properties: []json.RawMessage{json.RawMessage(`{"key":"format","type":"string","default":"YYYY-MM-DD"}`)}},
	} {
		t.CreatedAt, t.UpdatedAt = &now, &now
		s.put(&t)
	}
	return s
}

const maxTemplates = 10000

func (s *templateStore) put(t *propTemplate) bool {
	if _, exists := s.byID[t.ID]; !exists {
		if len(s.order) >= maxTemplates {
			return false
		}
		s.order = append(s.order, t.ID)
	}
	s.byID[t.ID] = t
	return true
}

func (s *templateStore) list() []propTemplate {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]propTemplate, 0, len(s.order))
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
	r.Headers = map[string]string{sourceHeader: "core"}
	return r
}

func (b *backend) tplList(context.Context, *mock.Request) (*mock.Response, error) {
	return withSource(&mock.Response{Status: http.StatusOK, Data: b.tpl.list()}), nil
}

func (b *backend) tplGet(_ context.Context, req *mock.Request) (*mock.Response, error) {
	b.tpl.mu.Lock()
	t, found := b.tpl.byID[req.Params["templateId"]]
	var c propTemplate
	if found {
		c = *t
	}
	b.tpl.mu.Unlock()
	if !found {
		return fail(http.StatusNotFound, "template not found"), nil
	}
	return withSource(&mock.Response{Status: http.StatusOK, Data: c}), nil
}

func (b *backend) tplForWidget(_ context.Context, req *mock.Request) (*mock.Response, error) {
	for _, t := range b.tpl.list() {
		if t.WidgetType == req.Params["widgetType"] {
			return withSource(&mock.Response{Status: http.StatusOK, Data: t}), nil
		}
	}
	return fail(http.StatusNotFound, "template not found"), nil
}

// templateInput validates a create or update body with the templates service's wording.
func templateInput(f map[string]json.RawMessage) (propTemplate, []string) {
	var t propTemplate
	var msgs []string
	str := func(name string, required bool) string {
		raw, has := f[name]
		if !has || strings.TrimSpace(string(raw)) == "null" {
			if required {
				msgs = append(msgs, name+" should not be empty", name+" must be a string")
			}
			return ""
		}
		var s string
		if json.Unmarshal(raw, &s) != nil {
			msgs = append(msgs, name+" must be a string")
			return ""
		}
		if required && s == "" {
			msgs = append(msgs, name+" should not be empty")
		}
		return s
	}
	t.ID = str("id", false)
	t.Name = str("name", true)
	t.WidgetType = str("widgetType", true)
	t.Description = str("description", false)
	if raw, has := f["properties"]; has && strings.TrimSpace(string(raw)) != "null" {
		if json.Unmarshal(raw, &t.Properties) != nil {
			msgs = append(msgs, "properties must be an array")
		}
	}
	if t.Properties == nil {
		t.Properties = []json.RawMessage{}
	}
	return t, msgs
}

func (b *backend) tplCreate(_ context.Context, req *mock.Request) (*mock.Response, error) {
	f, bad := fields(req)
	if bad != nil {
		return bad, nil
	}
	t, msgs := templateInput(f)
	if len(msgs) > 0 {
		return fail(http.StatusBadRequest, msgs), nil
	}
	if t.ID == "" {
		t.ID = objectID()
	}
	now := time.Now().UTC().Truncate(time.Millisecond)
	t.CreatedAt, t.UpdatedAt = &now, &now
	b.tpl.mu.Lock()
	defer b.tpl.mu.Unlock()
	if _, exists := b.tpl.byID[t.ID]; exists {
		return fail(http.StatusConflict, "template "+t.ID+" already exists"), nil
	}
	if !b.tpl.put(&t) {
		return fail(http.StatusInsufficientStorage, "the mock holds too many templates"), nil
	}
	return withSource(&mock.Response{Status: http.StatusCreated, Data: t}), nil
}

func (b *backend) tplUpdate(_ context.Context, req *mock.Request) (*mock.Response, error) {
	f, bad := fields(req)
	if bad != nil {
		return bad, nil
	}
	t, msgs := templateInput(f)
	if len(msgs) > 0 {
		return fail(http.StatusBadRequest, msgs), nil
	}
	id := req.Params["templateId"]
	b.tpl.mu.Lock()
	defer b.tpl.mu.Unlock()
	old, found := b.tpl.byID[id]
	if !found {
		return fail(http.StatusNotFound, "template not found"), nil
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
		return fail(http.StatusNotFound, "template not found"), nil
	}
	delete(b.tpl.byID, id)
	for i, x := range b.tpl.order {
		if x == id {
			b.tpl.order = append(b.tpl.order[:i], b.tpl.order[i+1:]...)
			break
		}
	}
	return withSource(&mock.Response{Status: http.StatusOK, Data: *t}), nil
}

// tplMigrate reports a plausible migration: nothing to copy from space databases, which this
// mock does not have. dryRun defaults to true, as the safe reading of an absent flag.
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
	return ok(http.StatusOK, migrationReport{DryRun: dry, SpacesScanned: 1, TemplatesFound: n, UniqueTemplates: n,
		AlreadyInCore: n, Conflicts: []map[string]any{}, Errors: []map[string]any{}, DurationMs: int64(b.gen.Int(3, 30))})
}

func (b *backend) tplCleanup(_ context.Context, req *mock.Request) (*mock.Response, error) {
	return ok(http.StatusOK, cleanupReport{SpaceID: req.Params["spaceId"], KeptNotInCore: []string{}})
}
