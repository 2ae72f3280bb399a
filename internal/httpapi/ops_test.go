package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/bson/primitive"

	"github.com/acme/app/internal/httpapi"
	"github.com/acme/app/internal/store/storetest"
)

// register creates a user through the API and returns its token and id.
func register(t *testing.T, s *stack, email string) (token, id string) {
	t.Helper()
	x := s.do(t, "POST", "/api/auth/register", []byte(`{"email":"`+email+`","password":"secret1","name":"N"}`), nil)
	if x.status != 201 {
		t.Fatalf("register = %d %s", x.status, x.body)
	}
	var res struct {
		AccessToken string
		User        struct{ ID string }
	}
	if err := json.Unmarshal(x.body, &res); err != nil {
		t.Fatal(err)
	}
	return res.AccessToken, res.User.ID
}

// Ensure the HTTP counter moves by exactly the requests made, labelled by route pattern (an
// unknown path is "unmatched", never the raw path), and that rate-limit rejections count.
func TestMetrics_HTTPAndRateLimit(t *testing.T) {
	t.Parallel()
	s := newStack(t, httpapi.Options{RateLimit: 1 << 20, RateWindow: 60e9, AuthRateLimit: 3, AuthRateWindow: 60e9,
		CORSOrigins: []string{"http://localhost:5173"}})
	tok, _ := register(t, s, "m@example.com")
	chat := []byte(`{"messages":[{"role":"user","content":"hi"}]}`)
	for range 2 {
		if x := s.do(t, "POST", "/api/ai/openai/chat", chat, bearer(tok)); x.status != 200 {
			t.Fatalf("chat = %d %s", x.status, x.body)
		}
	}
	s.do(t, "GET", "/api/no-such-route-123", nil, nil)
	const tpl = "/api/spaces/{spaceId}/properties/templates/{templateId}"
	s.do(t, "GET", "/api/spaces/s1/properties/templates/t1", nil, bearer(tok))
	for range 3 { // register used 1 of 3: the third of these is refused
		s.do(t, "POST", "/api/auth/login", []byte(`{"email":"m@example.com","password":"wrong-pass"}`), nil)
	}
	s.do(t, "OPTIONS", "/api/auth/login", nil, map[string]string{"Origin": "http://localhost:5173", "Access-Control-Request-Method": "POST"})
	reqs := s.metrics.HTTPRequests()
	tests := []struct {
		name                  string
		route, method, status string
		want                  float64
	}{
		{"AI calls", "POST /api/ai/openai/chat", "POST", "200", 2},
		{"unknown path", "unmatched", "GET", "404", 1},
		{"templated route", "GET " + tpl, "GET", "404", 1},
		{"register", "POST /api/auth/register", "POST", "201", 1},
		{"wrong passwords", "POST /api/auth/login", "POST", "401", 2},
		{"rate limited", "POST /api/auth/login", "POST", "429", 1},
		{"preflight labelled with the route it asks about", "POST /api/auth/login", "OPTIONS", "204", 1},
	}
	for _, tt := range tests {
		if got := testutil.ToFloat64(reqs.WithLabelValues(tt.route, tt.method, tt.status)); got != tt.want {
			t.Errorf("%s: app_http_requests_total{route=%q,status=%s} = %v, want %v", tt.name, tt.route, tt.status, got, tt.want)
		}
	}
	if got := testutil.ToFloat64(s.metrics.RateLimitRejections().WithLabelValues("auth")); got != 1 {
		t.Errorf("app_ratelimit_rejections_total{limit=auth} = %v, want 1", got)
	}
	// No label holds a raw path.
	srv := s.metrics.Handler()
	body := scrape(t, srv)
	if strings.Contains(body, "no-such-route-123") || strings.Contains(body, "/templates/t1") {
		t.Fatalf("a metric label holds a raw path:\n%s", body)
	}
	if !strings.Contains(body, "app_store_up 1") {
		t.Fatalf("app_store_up is not 1 with the store up")
	}
}

// Ensure every authenticated request acts with the account's current state: a granted or
// revoked role applies to a token issued before, a deleted user's token is refused. (The
// caller cache is off here; auth's tests show it expires within auth.CallerCacheTTL.)
func TestAccessFollowsTheAccount(t *testing.T) {
	t.Parallel()
	s := newStack(t, httpapiOptions())
	s.auth.SetCallerTTL(0)
	ctx := context.Background()
	tok, id := register(t, s, "gone@example.com")
	const admin = "/api/spaces/x/properties/migrate-templates-to-core"
	if x := s.do(t, "POST", admin, nil, bearer(tok)); x.status != 403 {
		t.Fatalf("before grant = %d", x.status)
	}
	if _, err := s.auth.Grant(ctx, "gone@example.com", "admin"); err != nil {
		t.Fatal(err)
	}
	if x := s.do(t, "POST", admin, nil, bearer(tok)); x.status != 200 {
		t.Fatalf("after grant, same token = %d %s: roles must follow the account", x.status, x.body)
	}
	if _, err := s.auth.Revoke(ctx, "gone@example.com", "admin"); err != nil {
		t.Fatal(err)
	}
	if x := s.do(t, "POST", admin, nil, bearer(tok)); x.status != 403 {
		t.Fatalf("after revoke = %d, want 403", x.status)
	}
	oid, _ := primitive.ObjectIDFromHex(id)
	db := storetest.Store(t).DB(s.appDB)
	if _, err := db.Collection("users").DeleteOne(ctx, bson.M{"_id": oid}); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/api/auth/profile", "/api/ai/usage", "/api/spaces/x/properties/templates"} {
		x := s.do(t, "GET", path, nil, bearer(tok))
		if x.status != 401 || string(x.body) != `{"statusCode":401,"message":"Unauthorized","error":"Unauthorized"}`+"\n" {
			t.Errorf("deleted user on %s = %d %s, want the 401 envelope", path, x.status, x.body)
		}
	}
}

// Ensure invalid UTF-8 in a JSON string is a 400 naming the field, on every JSON route.
func TestInvalidUTF8(t *testing.T) {
	t.Parallel()
	s := newStack(t, httpapiOptions())
	tok, _ := register(t, s, "u8@example.com")
	tests := []struct {
		path, body, want string
	}{
		{"/api/auth/register", "{\"email\":\"x@example.com\",\"password\":\"secret\xff\xfe\",\"name\":\"N\"}", "password must be valid UTF-8"},
		{"/api/auth/login", "{\"email\":\"x\xc3@example.com\",\"password\":\"secret1\"}", "email must be valid UTF-8"},
		{"/api/ai/openai/chat", "{\"messages\":[{\"role\":\"user\",\"content\":\"\xed\xa0\x80\"}]}", "messages must be valid UTF-8"},
		{"/api/spaces/s/properties/templates", "{\"name\":\"\xff\",\"widgetType\":\"w\",\"properties\":[]}", "name must be valid UTF-8"},
		{"/api/storage/mongodb/test", "[\"\xff\"]", "request body must be valid UTF-8"},
	}
	for _, tt := range tests {
		x := s.do(t, "POST", tt.path, []byte(tt.body), bearer(tok))
		if x.status != 400 || !strings.Contains(string(x.body), tt.want) || !strings.Contains(string(x.body), `"error":"Bad Request"`) {
			t.Errorf("%s = %d %s, want 400 %q", tt.path, x.status, x.body, tt.want)
		}
	}
}

// Ensure a header block over the limit is a 431 in the envelope.
func TestHeaderBlockTooLarge(t *testing.T) {
	t.Parallel()
	s := newStack(t, httpapi.Options{MaxHeaderBytes: 4096})
	x := s.do(t, "GET", "/api/health", nil, map[string]string{"X-Big": strings.Repeat("a", 5000)})
	if x.status != 431 || string(x.body) != `{"statusCode":431,"message":"Request header fields too large","error":"Request Header Fields Too Large"}`+"\n" {
		t.Fatalf("big header = %d %s", x.status, x.body)
	}
	if x := s.do(t, "GET", "/api/health", nil, map[string]string{"X-Small": "a"}); x.status != 200 {
		t.Fatalf("small header = %d", x.status)
	}
}

// scrape answers the metrics handler's text exposition.
func scrape(t *testing.T, h http.Handler) string {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != 200 {
		t.Fatalf("scrape = %d", rec.Code)
	}
	return rec.Body.String()
}
