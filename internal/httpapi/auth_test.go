package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/acme/app/internal/auth"
	"github.com/acme/app/internal/store/storetest"
)

var secret = []byte("0123456789abcdef0123456789abcdef")

func newAuthServer(t testing.TB) (http.Handler, *auth.Tokens) {
	t.Helper()
	tokens := auth.NewTokens(secret, time.Hour)
	svc, err := auth.New(context.Background(), storetest.DB(t), tokens, 4)
	if err != nil {
		t.Fatal(err)
	}
	return NewServer(Options{}, Deps{Tokens: tokens, Auth: svc}), tokens
}

func do(h http.Handler, method, path, body, token string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// Ensure register, login and profile answer the NestJS service's shapes and never the password.
func TestAuthRoutes(t *testing.T) {
	t.Parallel()
	h, _ := newAuthServer(t)
	rec := do(h, "POST", "/api/auth/register", `{"email":"ada@example.com","password":"secret1","name":"Ada"}`, "")
	if rec.Code != 201 {
		t.Fatalf("register = %d %s", rec.Code, rec.Body)
	}
	var res auth.AuthResult
	_ = json.Unmarshal(rec.Body.Bytes(), &res)
	if res.User.Email != "ada@example.com" || res.AccessToken == "" || strings.Contains(rec.Body.String(), "secret1") ||
		strings.Contains(rec.Body.String(), "password") {
		t.Fatalf("register body = %s", rec.Body)
	}
	rec = do(h, "POST", "/api/auth/register", `{"email":"ADA@example.com","password":"other12","name":"Ada 2"}`, "")
	if rec.Code != 409 || !strings.Contains(rec.Body.String(), `"message":"User with this email already exists","error":"Conflict"`) {
		t.Fatalf("duplicate = %d %s", rec.Code, rec.Body)
	}
	rec = do(h, "POST", "/api/auth/login", `{"email":"ada@example.com","password":"secret1"}`, "")
	if rec.Code != 200 {
		t.Fatalf("login = %d %s", rec.Code, rec.Body)
	}
	rec = do(h, "POST", "/api/auth/login", `{"email":"ada@example.com","password":"wrong12"}`, "")
	if rec.Code != 401 || rec.Body.String() != `{"statusCode":401,"message":"Invalid credentials","error":"Unauthorized"}`+"\n" {
		t.Fatalf("wrong password = %d %s", rec.Code, rec.Body)
	}
	rec = do(h, "GET", "/api/auth/profile", "", res.AccessToken)
	var prof auth.UserView
	_ = json.Unmarshal(rec.Body.Bytes(), &prof)
	if rec.Code != 200 || prof.ID != res.User.ID || prof.Name != "Ada" {
		t.Fatalf("profile = %d %s", rec.Code, rec.Body)
	}
	rec = do(h, "POST", "/api/auth/register", `{"email":{"$ne":null},"password":"12345"}`, "")
	var env struct{ Message []string }
	_ = json.Unmarshal(rec.Body.Bytes(), &env)
	want := []string{"email must be an email", "password must be longer than or equal to 6 characters", "name should not be empty", "name must be a string"}
	if rec.Code != 400 || strings.Join(env.Message, "|") != strings.Join(want, "|") {
		t.Fatalf("validation = %d %s", rec.Code, rec.Body)
	}
}

// Ensure every kind of bad token on a protected route is exactly the 401 envelope.
func TestRequireAuth(t *testing.T) {
	t.Parallel()
	h, tokens := newAuthServer(t)
	now := time.Now()
	sign := func(m jwt.SigningMethod, key any, c jwt.MapClaims) string {
		s, _ := jwt.NewWithClaims(m, c).SignedString(key)
		return s
	}
	good, _ := tokens.Issue(auth.Caller{ID: "64b000000000000000000001"})
	tests := map[string]string{
		"missing":    "",
		"garbage":    "garbage",
		"wrong key":  sign(jwt.SigningMethodHS256, []byte("wrong-wrong-wrong-wrong-wrong-wrong"), jwt.MapClaims{"sub": "x", "exp": now.Add(time.Hour).Unix()}),
		"alg none":   sign(jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, jwt.MapClaims{"sub": "x", "exp": now.Add(time.Hour).Unix()}),
		"HS384":      sign(jwt.SigningMethodHS384, secret, jwt.MapClaims{"sub": "x", "exp": now.Add(time.Hour).Unix()}),
		"expired":    sign(jwt.SigningMethodHS256, secret, jwt.MapClaims{"sub": "x", "exp": now.Add(-time.Minute).Unix()}),
		"no exp":     sign(jwt.SigningMethodHS256, secret, jwt.MapClaims{"sub": "x"}),
		"deleted id": good, // valid token, no such user: profile is 401 too
	}
	for name, tok := range tests {
		rec := do(h, "GET", "/api/auth/profile", "", tok)
		if rec.Code != 401 || rec.Body.String() != `{"statusCode":401,"message":"Unauthorized","error":"Unauthorized"}`+"\n" {
			t.Errorf("%s: %d %s", name, rec.Code, rec.Body)
		}
	}
	req := httptest.NewRequest("GET", "/api/auth/profile", nil)
	req.Header.Set("Authorization", "Basic "+good)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != 401 {
		t.Errorf("Basic scheme: %d", rec.Code)
	}
}

// Ensure the role guard answers the NestJS service's 403 and lets the role through.
func TestRequireRole(t *testing.T) {
	t.Parallel()
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { encode(w, 200, map[string]bool{"ok": true}) })
	tokens := auth.NewTokens(secret, time.Hour)
	h := observe(logDiscard(), true, 1<<20, nil, nil, requireAuth(&authenticator{tokens: tokens}, false, requireRole("admin", ok)))
	user, _ := tokens.Issue(auth.Caller{ID: "u", Roles: []string{"user"}})
	admin, _ := tokens.Issue(auth.Caller{ID: "a", Roles: []string{"user", "admin"}})
	rec := do(h, "GET", "/", "", user)
	if rec.Code != 403 || rec.Body.String() != `{"statusCode":403,"message":"Forbidden resource","error":"Forbidden"}`+"\n" {
		t.Fatalf("user = %d %s", rec.Code, rec.Body)
	}
	if rec := do(h, "GET", "/", "", admin); rec.Code != 200 {
		t.Fatalf("admin = %d", rec.Code)
	}
}

// Ensure register and login have their own stricter limit.
func TestAuthRateLimit(t *testing.T) {
	t.Parallel()
	tokens := auth.NewTokens(secret, time.Hour)
	svc, err := auth.New(context.Background(), storetest.DB(t), tokens, 4)
	if err != nil {
		t.Fatal(err)
	}
	h := NewServer(Options{RateLimit: 100, RateWindow: time.Minute, AuthRateLimit: 2, AuthRateWindow: time.Minute},
		Deps{Tokens: tokens, Auth: svc})
	for i := 0; i < 2; i++ {
		rec := do(h, "POST", "/api/auth/login", `{"email":"a@example.com","password":"x"}`, "")
		if rec.Code != 401 || rec.Header().Get("X-RateLimit-Limit") != "2" {
			t.Fatalf("login %d = %d %v", i, rec.Code, rec.Header())
		}
	}
	if rec := do(h, "POST", "/api/auth/register", `{}`, ""); rec.Code != 429 {
		t.Fatalf("3rd auth request = %d, want 429", rec.Code)
	}
	if rec := do(h, "GET", "/api/health", "", ""); rec.Code != 200 {
		t.Fatalf("health after auth limit = %d, want 200", rec.Code)
	}
}

// FuzzAuthDecoders sends arbitrary bytes to register and login through the whole stack:
// never a panic, never a 5xx, always the envelope on errors.
func FuzzAuthDecoders(f *testing.F) {
	for _, s := range []string{`{}`, `{"email":"a@example.com","password":"secret1","name":"A"}`, `{"email":`,
		`{"email":{"$ne":null},"password":{"$gt":""}}`, `[]`, `null`, "\xff\xfe", `{"password":"` + strings.Repeat("x", 100) + `"}`} {
		f.Add([]byte(s))
	}
	h, _ := newAuthServer(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, path := range []string{"/api/auth/register", "/api/auth/login"} {
			rec := do(h, "POST", path, string(body), "")
			if rec.Code >= 500 {
				t.Fatalf("%s %q = %d %s", path, body, rec.Code, rec.Body)
			}
			if rec.Code >= 400 {
				var env envelope
				if json.Unmarshal(rec.Body.Bytes(), &env) != nil || env.StatusCode != rec.Code {
					t.Fatalf("%s %q: not an envelope: %s", path, body, rec.Body)
				}
			}
		}
	})
}
