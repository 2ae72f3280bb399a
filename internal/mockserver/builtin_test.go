package mockserver

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/acme/app/internal/ai"
	"github.com/acme/app/internal/auth"
	"github.com/acme/app/internal/dbcheck"
	"github.com/acme/app/internal/httpapi"
	"github.com/acme/app/internal/templates"
	"github.com/acme/app/internal/usage"
)

// strict decodes the body into T refusing unknown fields: the built-in mock must answer
// exactly the contract types the real handlers encode.
func strict[T any](t *testing.T, a answer) T {
	t.Helper()
	var v T
	dec := json.NewDecoder(bytes.NewReader([]byte(a.body)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("decode %T from %s: %v", v, a.body, err)
	}
	return v
}

type envelopeBody struct {
	StatusCode int    `json:"statusCode"`
	Message    any    `json:"message"`
	Error      string `json:"error"`
}

func builtinServer(t *testing.T) *httptest.Server {
	t.Helper()
	_, hs, _ := newTestServer(t, "", "", nil)
	return hs
}

// Ensure health, root and auth answer the real server's shapes.
func TestBuiltin_HealthAndRoot(t *testing.T) {
	t.Parallel()
	hs := builtinServer(t)
	a := do(t, "GET", hs.URL+"/api/health", "")
	h := strict[httpapi.Health](t, a)
	if a.status != 200 || h.Status != "ok" || h.Service != "backend-api" || h.Version != "test" {
		t.Fatalf("health: %d %+v", a.status, h)
	}
	if _, err := time.Parse(time.RFC3339Nano, h.Timestamp); err != nil {
		t.Fatalf("timestamp %q: %v", h.Timestamp, err)
	}
	if a := do(t, "GET", hs.URL+"/api", ""); a.status != 200 || decode[map[string]string](t, a)["message"] == "" {
		t.Fatalf("root: %d %s", a.status, a.body)
	}
}

// Ensure register, login and profile answer auth.AuthResult and auth.UserView with tokens
// that verify, and refuse what the real server refuses with the same envelope and messages.
func TestBuiltin_Auth(t *testing.T) {
	t.Parallel()
	hs := builtinServer(t)
	tokens := auth.NewTokens([]byte(BuiltinSecret), time.Hour)

	a := do(t, "POST", hs.URL+"/api/auth/register", `{"email":"Dev@Example.com","password":"secret123","name":"Dev"}`, "Content-Type", "application/json")
	reg := strict[auth.AuthResult](t, a)
	if a.status != 201 || reg.User.Email != "dev@example.com" || reg.User.Name != "Dev" || !slices.Equal(reg.User.Roles, []string{"user"}) || len(reg.User.ID) != 24 {
		t.Fatalf("register: %d %+v", a.status, reg)
	}
	c, err := tokens.Verify(reg.AccessToken)
	if err != nil || c.ID != reg.User.ID || c.Email != reg.User.Email {
		t.Fatalf("token: %+v, %v", c, err)
	}

	for _, tc := range []struct {
		name, path, body string
		wantStatus       int
		wantMessage      any
	}{
		{"RegisterInvalid", "/api/auth/register", `{"email":"nope","password":"123"}`, 400,
			[]any{"email must be an email", "password must be longer than or equal to 6 characters", "name should not be empty", "name must be a string"}},
		{"RegisterTaken", "/api/auth/register", `{"email":"dev@example.com","password":"secret123","name":"Dev"}`, 409, "User with this email already exists"},
		{"RegisterNotObject", "/api/auth/register", `[1]`, 400, "request body must be a JSON object"},
		{"LoginInvalid", "/api/auth/login", `{"email":"x"}`, 400, []any{"email must be an email", "password should not be empty", "password must be a string"}},
		{"LoginWrongPassword", "/api/auth/login", `{"email":"dev@example.com","password":"wrong-one"}`, 401, "Invalid credentials"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := do(t, "POST", hs.URL+tc.path, tc.body, "Content-Type", "application/json")
			env := strict[envelopeBody](t, a)
			if a.status != tc.wantStatus || env.StatusCode != tc.wantStatus {
				t.Fatalf("status=%d, want %d (%s)", a.status, tc.wantStatus, a.body)
			}
			got, _ := json.Marshal(env.Message)
			want, _ := json.Marshal(tc.wantMessage)
			if !bytes.Equal(got, want) {
				t.Fatalf("message=%s, want %s", got, want)
			}
		})
	}

	a = do(t, "POST", hs.URL+"/api/auth/login", `{"email":"dev@example.com","password":"secret123"}`, "Content-Type", "application/json")
	if login := strict[auth.AuthResult](t, a); a.status != 200 || login.User.ID != reg.User.ID {
		t.Fatalf("login registered: %d %+v", a.status, login)
	}
	a = do(t, "POST", hs.URL+"/api/auth/login", `{"email":"admin@example.com","password":"anything"}`)
	anyone := strict[auth.AuthResult](t, a)
	if a.status != 200 || !slices.Contains(anyone.User.Roles, "admin") {
		t.Fatalf("login unknown admin: %d %+v", a.status, anyone)
	}

	a = do(t, "GET", hs.URL+"/api/auth/profile", "", "Authorization", "Bearer "+reg.AccessToken)
	if p := strict[auth.UserView](t, a); a.status != 200 || p.ID != reg.User.ID || p.Name != "Dev" {
		t.Fatalf("profile: %d %+v", a.status, p)
	}
	for _, h := range []string{"", "Bearer nope", "Basic abc"} {
		a := do(t, "GET", hs.URL+"/api/auth/profile", "", "Authorization", h)
		if env := strict[envelopeBody](t, a); a.status != 401 || env.Message != "Unauthorized" || env.Error != "Unauthorized" {
			t.Fatalf("profile with %q: %d %s", h, a.status, a.body)
		}
	}
}

// login returns a token of the built-in mock for email.
func login(t *testing.T, hs *httptest.Server, email string) string {
	t.Helper()
	a := do(t, "POST", hs.URL+"/api/auth/login", `{"email":"`+email+`","password":"secret123"}`)
	return strict[auth.AuthResult](t, a).AccessToken
}

// Ensure the AI endpoints answer the normalized completion, validate as the AI service does,
// and the usage endpoints report the calls made.
func TestBuiltin_AIAndUsage(t *testing.T) {
	t.Parallel()
	hs := builtinServer(t)
	tok := login(t, hs, "ai@example.com")
	bearer := "Bearer " + tok
	for _, s := range aiSpecs {
		a := do(t, "POST", hs.URL+s.path, `{"messages":[{"role":"user","content":"Hello there"}]}`, "Authorization", bearer)
		c := strict[ai.Completion](t, a)
		if a.status != 200 || c.Provider != s.provider || c.Model != s.model || c.Text == "" || c.Usage.TotalTokens != c.Usage.PromptTokens+c.Usage.CompletionTokens || len(c.RequestID) != 36 {
			t.Fatalf("%s: %d %+v", s.provider, a.status, c)
		}
	}
	a := do(t, "POST", hs.URL+"/api/ai/anthropic/messages", `{"messages":[{"role":"system","content":""}],"temperature":1.5}`, "Authorization", bearer)
	env := strict[envelopeBody](t, a)
	want := []any{"messages.0.role must be one of the following values: user, assistant", "messages.0.content should not be empty", "temperature must not be greater than 1"}
	if got, w := mustJSON(env.Message), mustJSON(want); a.status != 400 || got != w {
		t.Fatalf("validation: %d %s, want %s", a.status, got, w)
	}
	if a := do(t, "POST", hs.URL+"/api/ai/openai/chat", `{"messages":[]}`); a.status != 401 {
		t.Fatalf("no token: %d", a.status)
	}

	a = do(t, "GET", hs.URL+"/api/ai/usage?days=7", "", "Authorization", bearer)
	if s := strict[usage.Summary](t, a); a.status != 200 || s.TotalRequests != 3 || s.TotalTokens == 0 {
		t.Fatalf("summary: %d %+v", a.status, s)
	}
	a = do(t, "GET", hs.URL+"/api/ai/usage/providers", "", "Authorization", bearer)
	if rows := strict[[]usage.ProviderUsage](t, a); a.status != 200 || len(rows) != 3 || rows[0].Provider != "anthropic" || rows[0].RequestCount != 1 {
		t.Fatalf("providers: %d %+v", a.status, rows)
	}
	other := "Bearer " + login(t, hs, "other@example.com")
	if s := strict[usage.Summary](t, do(t, "GET", hs.URL+"/api/ai/usage", "", "Authorization", other)); s.TotalRequests != 0 {
		t.Fatalf("another user's summary: %+v", s)
	}
	for q, msg := range map[string]string{"0": "days must not be less than 1", "367": "days must not be greater than 366", "week": "days must be an integer number"} {
		a := do(t, "GET", hs.URL+"/api/ai/usage?days="+q, "", "Authorization", bearer)
		if env := strict[envelopeBody](t, a); a.status != 400 || mustJSON(env.Message) != mustJSON([]string{msg}) {
			t.Fatalf("days=%s: %d %s", q, a.status, a.body)
		}
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// Ensure the storage endpoints answer the dbcheck shapes and validate their bodies.
func TestBuiltin_Storage(t *testing.T) {
	t.Parallel()
	hs := builtinServer(t)
	bearer := "Bearer " + login(t, hs, "db@example.com")
	a := do(t, "POST", hs.URL+"/api/storage/mongodb/test", `{"connectionString":"mongodb://localhost:27017","database":"shop"}`, "Authorization", bearer)
	if r := strict[dbcheck.TestResult](t, a); a.status != 200 || !r.Success || !slices.Contains(r.Databases, "shop") {
		t.Fatalf("test: %d %+v", a.status, r)
	}
	a = do(t, "POST", hs.URL+"/api/storage/mongodb/query", `{"connectionString":"mongodb://h","database":"d","collection":"c","limit":2}`, "Authorization", bearer)
	r := strict[dbcheck.QueryResult](t, a)
	if a.status != 200 || !r.Success || r.Count != 2 || len(r.Documents) != 2 || !strings.Contains(string(r.Documents[0]), `"_id"`) {
		t.Fatalf("query: %d %+v", a.status, r)
	}
	for body, msg := range map[string]string{
		`{"database":"d"}`: "connectionString should not be empty",
		`{"connectionString":"mongodb://h","database":"d","collection":"c","filter":{"$where":"1"}}`: "filter must not use the $where operator",
		`{"connectionString":"mongodb://h","database":"d","collection":"c","limit":0}`:               "limit must not be less than 1",
	} {
		path := "/api/storage/mongodb/query"
		if !strings.Contains(body, "collection") {
			path = "/api/storage/mongodb/test"
		}
		a := do(t, "POST", hs.URL+path, body, "Authorization", bearer)
		if a.status != 400 || !strings.Contains(a.body, msg) {
			t.Fatalf("%s: %d %s, want %q", body, a.status, a.body, msg)
		}
	}
}

// Ensure template CRUD is kept in memory, and migrate and cleanup need the admin role.
func TestBuiltin_Templates(t *testing.T) {
	t.Parallel()
	hs := builtinServer(t)
	user := "Bearer " + login(t, hs, "tpl@example.com")
	admin := "Bearer " + login(t, hs, "admin@example.com")
	base := hs.URL + "/api/spaces/s1/properties"

	a := do(t, "GET", base+"/templates", "", "Authorization", user)
	list := strict[[]templates.Template](t, a)
	if a.status != 200 || len(list) == 0 || a.header.Get(sourceHeader) != "core" {
		t.Fatalf("list: %d %v", a.status, a.body)
	}
	a = do(t, "POST", base+"/templates", `{"id":"t1","name":"Rating","widgetType":"rating","properties":[{"key":"max","default":5}]}`, "Authorization", user)
	if c := strict[templates.Template](t, a); a.status != 201 || c.ID != "t1" || c.CreatedAt == nil {
		t.Fatalf("create: %d %s", a.status, a.body)
	}
	if a := do(t, "POST", base+"/templates", `{"id":"t1","name":"x","widgetType":"y","properties":[]}`, "Authorization", user); a.status != 409 {
		t.Fatalf("duplicate create: %d", a.status)
	}
	if a := do(t, "POST", base+"/templates", `{"name":""}`, "Authorization", user); a.status != 400 ||
		!strings.Contains(a.body, "name should not be empty") || !strings.Contains(a.body, "widgetType should not be empty") {
		t.Fatalf("invalid create: %d %s", a.status, a.body)
	}
	if g := strict[templates.Template](t, do(t, "GET", base+"/templates/t1", "", "Authorization", user)); g.Name != "Rating" {
		t.Fatalf("get: %+v", g)
	}
	if g := strict[templates.Template](t, do(t, "GET", base+"/templates/widget/rating", "", "Authorization", user)); g.ID != "t1" {
		t.Fatalf("for widget: %+v", g)
	}
	a = do(t, "PUT", base+"/templates/t1", `{"name":"Stars","widgetType":"rating","properties":[]}`, "Authorization", user)
	if u := strict[templates.Template](t, a); a.status != 200 || u.Name != "Stars" {
		t.Fatalf("update: %d %s", a.status, a.body)
	}
	if a := do(t, "DELETE", base+"/templates/t1", "", "Authorization", user); a.status != 200 {
		t.Fatalf("delete: %d", a.status)
	}
	if a := do(t, "GET", base+"/templates/t1", "", "Authorization", user); a.status != 404 {
		t.Fatalf("get deleted: %d", a.status)
	}

	if a := do(t, "POST", base+"/migrate-templates-to-core?dryRun=true", "", "Authorization", user); a.status != 403 {
		t.Fatalf("migrate as user: %d", a.status)
	}
	a = do(t, "POST", base+"/migrate-templates-to-core?dryRun=false", "", "Authorization", admin)
	if r := strict[templates.MigrationReport](t, a); a.status != 200 || r.DryRun {
		t.Fatalf("migrate: %d %s", a.status, a.body)
	}
	a = do(t, "DELETE", base+"/cleanup-space-templates", "", "Authorization", admin)
	if r := strict[templates.CleanupReport](t, a); a.status != 200 || r.SpaceID != "s1" {
		t.Fatalf("cleanup: %d %s", a.status, a.body)
	}
}
