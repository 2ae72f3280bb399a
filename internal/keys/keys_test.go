package keys

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.mongodb.org/mongo-driver/bson"

	"github.com/acme/app/internal/apperr"
	"github.com/acme/app/internal/store/storetest"
)

// clock is a settable time source.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

func newService(t *testing.T) (*Service, *clock) {
	t.Helper()
	clk := &clock{t: time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)}
	s := New(storetest.DB(t), Options{Now: clk.now})
	if err := s.EnsureIndexes(context.Background()); err != nil {
		t.Fatal(err)
	}
	return s, clk
}

func TestCreateListAuthenticate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := newService(t)
	days := 7
	c, err := s.Create(ctx, "u1", "a@example.com", CreateInput{Name: "laptop", ExpiresInDays: &days})
	if err != nil {
		t.Fatal(err)
	}
	if !LooksLikeKey(c.Key) || len(c.Key) != len(Prefix)+secretLen || !strings.HasPrefix(c.Key, Prefix+c.Prefix) || len(c.Prefix) != prefixLen {
		t.Fatalf("key %q prefix %q", c.Key, c.Prefix)
	}
	if c.ExpiresAt == nil || !c.ExpiresAt.Equal(c.CreatedAt.AddDate(0, 0, 7)) {
		t.Fatalf("expiresAt %v, created %v", c.ExpiresAt, c.CreatedAt)
	}
	// Only the digest is stored.
	var raw bson.M
	if err := s.coll.FindOne(ctx, bson.M{"_id": c.ID}).Decode(&raw); err != nil {
		t.Fatal(err)
	}
	if raw["digest"] != Digest(c.Key) || strings.Contains(strings.ToLower(mustJSON(t, raw)), strings.ToLower(c.Key[len(Prefix):])) {
		t.Fatalf("stored %v", raw)
	}
	if _, err := s.Create(ctx, "u2", "b@example.com", CreateInput{Name: "other"}); err != nil {
		t.Fatal(err)
	}
	list, err := s.List(ctx, "u1")
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].ID != c.ID || list[0].Name != "laptop" || list[0].Prefix != c.Prefix {
		t.Fatalf("list %+v", list)
	}
	if all, _ := s.List(ctx, ""); len(all) != 2 {
		t.Fatalf("all keys %+v", all)
	}
	owner, err := s.Authenticate(ctx, c.Key)
	if err != nil || owner != (Owner{UserID: "u1", KeyID: c.ID}) {
		t.Fatalf("authenticate = %+v, %v", owner, err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if list, _ = s.List(ctx, "u1"); list[0].LastUsedAt != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("lastUsedAt not set by a use")
		}
	}
}

func TestAuthenticateRefuses(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, clk := newService(t)
	days := 1
	c, err := s.Create(ctx, "u1", "", CreateInput{Name: "short", ExpiresInDays: &days})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, key string }{
		{"empty", ""},
		{"jwt-like", "eyJhbGciOiJIUzI1NiJ9.e30.x"},
		{"unknown", Prefix + strings.Repeat("0", secretLen)},
		{"bad characters", Prefix + strings.Repeat("-", secretLen)},
		{"too short", c.Key[:20]},
		{"suffix", c.Key + "x"},
	} {
		if _, err := s.Authenticate(ctx, tc.key); apperr.KindOf(err) != apperr.Unauthorized {
			t.Errorf("%s: err %v, want Unauthorized", tc.name, err)
		}
	}
	if _, err := s.Authenticate(ctx, c.Key); err != nil {
		t.Fatal(err)
	}
	clk.add(24 * time.Hour) // expired, even though cached
	if _, err := s.Authenticate(ctx, c.Key); apperr.KindOf(err) != apperr.Unauthorized {
		t.Fatalf("expired key: %v", err)
	}
}

// Ensure a revocation made by another process (another Service on the same collection) is
// honoured once the cache entry is CacheTTL old, and at once in the revoking process.
func TestRevocationWithinTTL(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := storetest.DB(t)
	clk := &clock{t: time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)}
	a, b := New(db, Options{Now: clk.now}), New(db, Options{Now: clk.now})
	if err := a.EnsureIndexes(ctx); err != nil {
		t.Fatal(err)
	}
	c, err := a.Create(ctx, "u1", "", CreateInput{Name: "k"})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []*Service{a, b} {
		if _, err := s.Authenticate(ctx, c.Key); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Revoke(ctx, "u2", c.ID); apperr.KindOf(err) != apperr.NotFound {
		t.Fatalf("revoke of another user's key: %v", err)
	}
	if err := b.Revoke(ctx, "u1", c.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Authenticate(ctx, c.Key); apperr.KindOf(err) != apperr.Unauthorized {
		t.Fatalf("revoking process still accepts the key: %v", err)
	}
	clk.add(CacheTTL - time.Second)
	if _, err := a.Authenticate(ctx, c.Key); err != nil {
		t.Fatalf("within the cache lifetime the other process may still accept it, got %v", err)
	}
	clk.add(time.Second)
	if _, err := a.Authenticate(ctx, c.Key); apperr.KindOf(err) != apperr.Unauthorized {
		t.Fatalf("after %s the key is still accepted: %v", CacheTTL, err)
	}
	if err := b.Revoke(ctx, "", c.ID); apperr.KindOf(err) != apperr.NotFound {
		t.Fatalf("second revoke: %v", err)
	}
	if list, _ := a.List(ctx, "u1"); len(list) != 0 {
		t.Fatalf("revoked key listed: %+v", list)
	}
}

func TestParseCreate(t *testing.T) {
	t.Parallel()
	seven := 7
	for _, tc := range []struct {
		body string
		want CreateInput
		msgs []string
	}{
		{`{"name":"ci"}`, CreateInput{Name: "ci"}, nil},
		{`{"name":"ci","expiresInDays":7}`, CreateInput{Name: "ci", ExpiresInDays: &seven}, nil},
		{`{}`, CreateInput{}, []string{"name should not be empty", "name must be a string"}},
		{`{"name":5}`, CreateInput{}, []string{"name must be a string"}},
		{`{"name":"  "}`, CreateInput{}, []string{"name should not be empty"}},
		{`{"name":"` + strings.Repeat("x", 101) + `"}`, CreateInput{}, []string{"name must be shorter than or equal to 100 characters"}},
		{`{"name":"a\u0007"}`, CreateInput{}, []string{"name must not contain control characters"}},
		{`{"name":"c1\u009b2J"}`, CreateInput{}, []string{"name must not contain control characters"}},
		{`{"name":"\u202eRTL key"}`, CreateInput{}, []string{"name must not contain control characters"}},
		{`{"name":"ci","expiresInDays":"7"}`, CreateInput{}, []string{"expiresInDays must be an integer number"}},
		{`{"name":"ci","expiresInDays":1.5}`, CreateInput{}, []string{"expiresInDays must be an integer number"}},
		{`{"name":"ci","expiresInDays":0}`, CreateInput{}, []string{"expiresInDays must not be less than 1"}},
		{`{"name":"ci","expiresInDays":4000}`, CreateInput{}, []string{"expiresInDays must not be greater than 3650"}},
	} {
		var fields map[string]json.RawMessage
		if err := json.Unmarshal([]byte(tc.body), &fields); err != nil {
			t.Fatal(err)
		}
		in, msgs := ParseCreate(fields)
		if diff := cmp.Diff(tc.msgs, msgs); diff != "" {
			t.Errorf("%s: messages (-want +got):\n%s", tc.body, diff)
		}
		if len(tc.msgs) == 0 && !cmp.Equal(tc.want, in) {
			t.Errorf("%s: input %+v, want %+v", tc.body, in, tc.want)
		}
	}
}

func TestKeyShape(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for range 200 {
		k, err := newKey()
		if err != nil {
			t.Fatal(err)
		}
		if len(k) != len(Prefix)+secretLen || !LooksLikeKey(k) || seen[k] {
			t.Fatalf("key %q", k)
		}
		seen[k] = true
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// seedKeys stores n live keys of user (ids k000…), as Create would, without their secrets.
func seedKeys(t *testing.T, s *Service, user string, n int) {
	t.Helper()
	docs := make([]any, n)
	for i := range docs {
		docs[i] = bson.D{{Key: "_id", Value: fmt.Sprintf("k%03d", i)}, {Key: "digest", Value: fmt.Sprintf("d%03d", i)},
			{Key: "userId", Value: user}, {Key: "name", Value: "n"}, {Key: "prefix", Value: "p"}, {Key: "createdAt", Value: time.Now()}, {Key: "revokedAt", Value: nil}}
	}
	if _, err := s.coll.InsertMany(context.Background(), docs); err != nil {
		t.Fatal(err)
	}
}

// Ensure concurrent creates cannot pass MaxPerUser together: of MaxPerUser+40 creates at once
// from a user holding MaxPerUser-10 keys, exactly 10 succeed.
func TestCreateLimit_Concurrent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := newService(t)
	seedKeys(t, s, "u1", MaxPerUser-10)
	var wg sync.WaitGroup
	var created atomic.Int32
	for range 50 {
		wg.Go(func() {
			if _, err := s.Create(ctx, "u1", "a@example.com", CreateInput{Name: "race"}); err == nil {
				created.Add(1)
			} else if apperr.KindOf(err) != apperr.Conflict {
				t.Errorf("create: %v", err)
			}
		})
	}
	wg.Wait()
	n, _ := s.coll.CountDocuments(ctx, bson.D{{Key: "userId", Value: "u1"}})
	if created.Load() != 10 || n != MaxPerUser {
		t.Fatalf("%d creates succeeded, %d keys stored; want 10 and %d", created.Load(), n, MaxPerUser)
	}
}

// Ensure a user holds at most MaxPerUser keys: the next is a Conflict and stores nothing, a
// revocation makes room, and other users are not affected.
func TestCreateLimit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := newService(t)
	seedKeys(t, s, "u1", MaxPerUser)
	if _, err := s.Create(ctx, "u1", "a@example.com", CreateInput{Name: "one too many"}); apperr.KindOf(err) != apperr.Conflict {
		t.Fatalf("key %d: err %v, want Conflict", MaxPerUser+1, err)
	}
	if n, _ := s.coll.CountDocuments(ctx, bson.D{{Key: "userId", Value: "u1"}}); n != MaxPerUser {
		t.Fatalf("%d keys stored, want %d", n, MaxPerUser)
	}
	if _, err := s.Create(ctx, "u2", "b@example.com", CreateInput{Name: "other user"}); err != nil {
		t.Fatalf("another user: %v", err)
	}
	if err := s.Revoke(ctx, "u1", "k000"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Create(ctx, "u1", "a@example.com", CreateInput{Name: "after a revocation"}); err != nil {
		t.Fatalf("after a revocation: %v", err)
	}
}
