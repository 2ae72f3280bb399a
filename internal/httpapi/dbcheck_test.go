package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/bson/primitive"

	"github.com/acme/app/internal/auth"
	"github.com/acme/app/internal/dbcheck"
	"github.com/acme/app/internal/httpapi"
	"github.com/acme/app/internal/memlimit"
	"github.com/acme/app/internal/store/storetest"
)

func dbcheckServer(t *testing.T, allowed []string) (*httptest.Server, string, *httpapi.SyncBuffer) {
	t.Helper()
	logs := &httpapi.SyncBuffer{}
	log := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	svc, err := dbcheck.New(dbcheck.Options{AllowedHosts: allowed, Timeout: 2 * time.Second, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Close(context.Background()) })
	tokens := auth.NewTokens([]byte("test-secret-test-secret-test-secret"), time.Hour)
	tok, err := tokens.Issue(auth.Caller{ID: primitive.NewObjectID().Hex(), Email: "a@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(httpapi.NewServer(httpapi.Options{Logger: log, RateLimit: 100000, RateWindow: time.Minute,
		AuthRateLimit: 100000, AuthRateWindow: time.Minute}, httpapi.Deps{Tokens: tokens, DBCheck: svc}))
	t.Cleanup(srv.Close)
	return srv, tok, logs
}

func post(t *testing.T, srv *httptest.Server, path, token string, body any) (int, map[string]any) {
	t.Helper()
	var buf []byte
	switch b := body.(type) {
	case string:
		buf = []byte(b)
	default:
		buf, _ = json.Marshal(b)
	}
	req, _ := http.NewRequest("POST", srv.URL+path, bytes.NewReader(buf))
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatalf("%s: body is not a JSON object: %v", path, err)
	}
	return resp.StatusCode, out
}

// Ensure the storage endpoints answer every outcome with the right status and body.
func TestStorageEndpoints(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := storetest.DB(t)
	id := primitive.NewObjectID()
	if _, err := db.Collection("users").InsertMany(ctx, []any{
		bson.M{"_id": id, "email": "a@example.com", "at": time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)},
		bson.M{"email": "b@example.com"},
	}); err != nil {
		t.Fatal(err)
	}
	uri := storetest.Store(t).URI()
	srv, tok, logs := dbcheckServer(t, []string{"127.0.0.1"})
	closed, _, _ := dbcheckServer(t, nil)

	cases := []struct {
		name       string
		srv        *httptest.Server
		path       string
		token      string
		body       any
		wantStatus int
		check      func(t *testing.T, body map[string]any)
	}{
		{"TestOK", srv, "test", tok, map[string]any{"connectionString": uri, "database": db.Name()}, 200, func(t *testing.T, b map[string]any) {
			if b["success"] != true || b["version"] == "" || b["clusterName"] != "127.0.0.1" {
				t.Fatalf("body = %v", b)
			}
			if _, ok := b["latency"].(float64); !ok {
				t.Fatalf("latency %v is not a number", b["latency"])
			}
		}},
		{"TestUnreachable", srv, "test", tok, map[string]any{"connectionString": "mongodb://u:hunter2pw@127.0.0.1:1/?serverSelectionTimeoutMS=300", "database": "admin"}, 200, func(t *testing.T, b map[string]any) {
			if b["success"] != false || !strings.Contains(b["error"].(string), "127.0.0.1:1") {
				t.Fatalf("body = %v", b)
			}
		}},
		{"TestValidation", srv, "test", tok, map[string]any{"connectionString": 5}, 400, func(t *testing.T, b map[string]any) {
			if msgs, _ := b["message"].([]any); len(msgs) == 0 || msgs[0] != "connectionString must be a string" || b["error"] != "Bad Request" {
				t.Fatalf("body = %v", b)
			}
		}},
		{"TestUnparsable", srv, "test", tok, map[string]any{"connectionString": "mongodb://u:hunter2pw@h:port/", "database": "d"}, 400, nil},
		{"TestMalformedJSON", srv, "test", tok, `{"connectionString":`, 400, nil},
		{"TestNoToken", srv, "test", "", map[string]any{"connectionString": uri, "database": "d"}, 401, nil},
		{"TestLoopbackForbidden", closed, "test", tok, map[string]any{"connectionString": uri, "database": "d"}, 403, func(t *testing.T, b map[string]any) {
			if msg, _ := b["message"].(string); !strings.Contains(msg, "dbcheck.allowed_hosts") || b["error"] != "Forbidden" {
				t.Fatalf("body = %v", b)
			}
		}},
		{"TestRefusedOption", srv, "test", tok, map[string]any{"connectionString": "mongodb://h/?authMechanism=MONGODB-AWS", "database": "d"}, 400, nil},
		{"QueryByOID", srv, "query", tok, map[string]any{"connectionString": uri, "database": db.Name(), "collection": "users", "filter": map[string]any{"_id": map[string]any{"$oid": id.Hex()}}}, 200, func(t *testing.T, b map[string]any) {
			docs, _ := b["documents"].([]any)
			if b["success"] != true || b["count"] != 1.0 || len(docs) != 1 {
				t.Fatalf("body = %v", b)
			}
			doc := docs[0].(map[string]any)
			if doc["_id"] != id.Hex() || doc["email"] != "a@example.com" {
				t.Fatalf("document = %v", doc)
			}
			if at, _ := doc["at"].(map[string]any); at["$date"] != "2025-01-01T00:00:00Z" {
				t.Fatalf("at = %v, want relaxed Extended JSON date", doc["at"])
			}
		}},
		{"QueryLimit", srv, "query", tok, map[string]any{"connectionString": uri, "database": db.Name(), "collection": "users", "limit": 1}, 200, func(t *testing.T, b map[string]any) {
			if b["count"] != 1.0 {
				t.Fatalf("body = %v", b)
			}
		}},
		{"QueryLimitZero", srv, "query", tok, map[string]any{"connectionString": uri, "database": db.Name(), "collection": "users", "limit": 0}, 400, nil},
		{"QueryLimitOverMax", srv, "query", tok, map[string]any{"connectionString": uri, "database": db.Name(), "collection": "users", "limit": 1001}, 400, nil},
		{"QueryWhere", srv, "query", tok, map[string]any{"connectionString": uri, "database": db.Name(), "collection": "users", "filter": map[string]any{"$or": []any{map[string]any{"$where": "true"}}}}, 400, func(t *testing.T, b map[string]any) {
			if msgs, _ := b["message"].([]any); len(msgs) != 1 || !strings.Contains(msgs[0].(string), "$where") {
				t.Fatalf("body = %v", b)
			}
		}},
		{"QueryMissingCollection", srv, "query", tok, map[string]any{"connectionString": uri, "database": db.Name()}, 400, nil},
		{"QueryForbidden", closed, "query", tok, map[string]any{"connectionString": uri, "database": db.Name(), "collection": "users"}, 403, nil},
		{"QueryUnreachable", srv, "query", tok, map[string]any{"connectionString": "mongodb://127.0.0.1:1/?serverSelectionTimeoutMS=300", "database": "d", "collection": "c"}, 502, nil},
		{"QueryNoToken", srv, "query", "", map[string]any{"connectionString": uri, "database": "d", "collection": "c"}, 401, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			status, body := post(t, tc.srv, "/api/storage/mongodb/"+tc.path, tc.token, tc.body)
			if status != tc.wantStatus {
				t.Fatalf("status = %d, want %d (body %v)", status, tc.wantStatus, body)
			}
			if status >= 400 {
				if body["statusCode"] != float64(status) || body["message"] == nil || body["error"] == nil {
					t.Fatalf("body %v is not the error envelope", body)
				}
			}
			if strings.Contains(strings.Join(strings.Fields(strings.ReplaceAll(jsonText(body), `"`, " ")), " "), "hunter2pw") {
				t.Fatalf("answer shows the password: %v", body)
			}
			if tc.check != nil {
				tc.check(t, body)
			}
		})
	}
	if strings.Contains(logs.String(), "hunter2pw") {
		t.Fatalf("logs show the password:\n%s", logs.String())
	}
	if !strings.Contains(logs.String(), "mongodb test failed") {
		t.Fatalf("the failed test was not logged, so the redaction check proves nothing:\n%s", logs.String())
	}
}

func jsonText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// Ensure a query's answer is held within the process's bound on buffered bytes: given back
// once written, and answered 503 with Retry-After (code overloaded) in the envelope when it
// does not fit.
func TestStorageQuery_WithinTheBufferedBound(t *testing.T) {
	t.Parallel()
	db := storetest.DB(t)
	docs := make([]any, 10)
	for i := range docs {
		docs[i] = bson.M{"n": i, "pad": strings.Repeat("x", 2000)}
	}
	if _, err := db.Collection("items").InsertMany(context.Background(), docs); err != nil {
		t.Fatal(err)
	}
	tokens := auth.NewTokens([]byte("test-secret-test-secret-test-secret"), time.Hour)
	tok, err := tokens.Issue(auth.Caller{ID: primitive.NewObjectID().Hex(), Email: "a@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	body := map[string]any{"connectionString": storetest.Store(t).URI(), "database": db.Name(), "collection": "items"}
	tests := []struct {
		name       string
		max        int64
		wantStatus int
	}{
		{"OK", 1 << 20, 200},
		{"ErrOverloaded", 16 << 10, 503}, // the body fits, the answer (10 × 2 KB, twice) does not
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mem := memlimit.New(tt.max)
			svc, err := dbcheck.New(dbcheck.Options{AllowedHosts: []string{"127.0.0.1"}, Memory: mem})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = svc.Close(context.Background()) })
			srv := httptest.NewServer(httpapi.NewServer(httpapi.Options{Memory: mem}, httpapi.Deps{Tokens: tokens, DBCheck: svc}))
			t.Cleanup(srv.Close)
			status, out := post(t, srv, "/api/storage/mongodb/query", tok, body)
			if status != tt.wantStatus {
				t.Fatalf("status=%d %v, want %d", status, out, tt.wantStatus)
			}
			if status == 200 && out["count"] != 10.0 {
				t.Fatalf("count=%v, want 10", out["count"])
			}
			if status == 503 && (out["error"] != "Service Unavailable" || !strings.Contains(out["message"].(string), "server.max_buffered_bytes")) {
				t.Fatalf("body %v, want the overloaded envelope", out)
			}
			// The handler gives the bytes back as it returns, just after the client has read
			// the answer.
			for deadline := time.Now().Add(2 * time.Second); mem.Used() != 0 && time.Now().Before(deadline); {
				time.Sleep(time.Millisecond)
			}
			if got := mem.Used(); got != 0 {
				t.Fatalf("%d bytes held once the answer was written, want 0", got)
			}
		})
	}
}

// Ensure the storage endpoints past dbcheck.max_concurrent answer 503 with Retry-After: 1
// without waiting for a slot, naming the setting and not the connection string's password.
func TestStorage_ConcurrencyBound(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	accepted := make(chan net.Conn, 64)
	go func() { // a server that takes connections and never answers: the first call holds its slot
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		for len(accepted) > 0 {
			(<-accepted).Close()
		}
	})
	svc, err := dbcheck.New(dbcheck.Options{AllowedHosts: []string{"127.0.0.1"}, Timeout: time.Second, MaxConcurrent: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Close(context.Background()) })
	tokens := auth.NewTokens([]byte("test-secret-test-secret-test-secret"), time.Hour)
	tok, err := tokens.Issue(auth.Caller{ID: primitive.NewObjectID().Hex(), Email: "a@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(httpapi.NewServer(httpapi.Options{}, httpapi.Deps{Tokens: tokens, DBCheck: svc}))
	t.Cleanup(srv.Close)
	uri := "mongodb://user:hunter2@" + ln.Addr().String() + "/?directConnection=true"

	held := make(chan int, 1)
	go func() {
		status, _ := post(t, srv, "/api/storage/mongodb/test", tok, map[string]any{"connectionString": uri, "database": "db"})
		held <- status
	}()
	select { // a connection arrived: the first call holds its slot
	case c := <-accepted:
		accepted <- c
	case status := <-held:
		t.Fatalf("the first test answered %d before it reached the server", status)
	case <-time.After(10 * time.Second):
		t.Fatal("the first test never reached the server")
	}
	for _, tt := range []struct {
		name, path string
		body       map[string]any
	}{
		{"ErrTestOverloaded", "/api/storage/mongodb/test", map[string]any{"connectionString": uri, "database": "db"}},
		{"ErrQueryOverloaded", "/api/storage/mongodb/query", map[string]any{"connectionString": uri, "database": "db", "collection": "c"}},
	} {
		buf, _ := json.Marshal(tt.body)
		req, _ := http.NewRequest("POST", srv.URL+tt.path, bytes.NewReader(buf))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := srv.Client().Do(req) // a refusal that waited would get the slot and a 200
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if got, want := resp.StatusCode, http.StatusServiceUnavailable; got != want {
			t.Fatalf("%s: status=%d %s, want %d", tt.name, got, body, want)
		}
		if got, want := resp.Header.Get("Retry-After"), "1"; got != want {
			t.Fatalf("%s: Retry-After=%q, want %q", tt.name, got, want)
		}
		if !strings.Contains(string(body), "dbcheck.max_concurrent") || strings.Contains(string(body), "hunter2") {
			t.Fatalf("%s: body %s, want the setting named and no password", tt.name, body)
		}
	}
	if got := <-held; got != http.StatusOK {
		t.Fatalf("the held test answered %d, want 200 (a failed test is a result)", got)
	}
	if got, want := svc.Refused(), int64(2); got != want {
		t.Fatalf("refused=%d, want %d", got, want)
	}
}
