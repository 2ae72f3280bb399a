package mockserver

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/acme/app/internal/auth"
	"github.com/acme/app/internal/httpapi"
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
