package auth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/bson/primitive"
	"go.mongodb.org/mongo-driver/mongo"
	"golang.org/x/crypto/bcrypt"

	"github.com/acme/app/internal/apperr"
	"github.com/acme/app/internal/store"
	"github.com/acme/app/internal/store/storetest"
)

var testSecret = []byte("0123456789abcdef0123456789abcdef")

func newService(t *testing.T) (*Service, *mongo.Database) {
	t.Helper()
	db := storetest.DB(t)
	s, err := New(context.Background(), db, NewTokens(testSecret, time.Hour), 4)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.EnsureIndexes(context.Background()); err != nil {
		t.Fatal(err)
	}
	return s, db
}

func raw(t *testing.T, body string) map[string]json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(body), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// Ensure every register validation message is class-validator's, all failures at once.
func TestParseRegister(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("é", 40) // 40 characters, 80 bytes
	tests := []struct {
		name string
		body string
		want []string
	}{
		{"OK", `{"email":"a@example.com","password":"secret1","name":"A"}`, nil},
		{"OK extra fields ignored", `{"email":"a@example.com","password":"secret1","name":"A","admin":true}`, nil},
		{"empty body", `{}`, []string{"email must be an email", "password must be longer than or equal to 6 characters", "password must be a string", "name should not be empty", "name must be a string"}},
		{"bad email", `{"email":"not-an-email","password":"secret1","name":"A"}`, []string{"email must be an email"}},
		{"operator object as email", `{"email":{"$ne":null},"password":"secret1","name":"A"}`, []string{"email must be an email"}},
		{"short password", `{"email":"a@example.com","password":"12345","name":"A"}`, []string{"password must be longer than or equal to 6 characters"}},
		{"numeric password", `{"email":"a@example.com","password":123456,"name":"A"}`, []string{"password must be longer than or equal to 6 characters", "password must be a string"}},
		{"password over 72 bytes", `{"email":"a@example.com","password":"` + long + `","name":"A"}`, []string{"password must be shorter than or equal to 72 characters"}},
		{"empty name", `{"email":"a@example.com","password":"secret1","name":""}`, []string{"name should not be empty"}},
		{"null name", `{"email":"a@example.com","password":"secret1","name":null}`, []string{"name should not be empty", "name must be a string"}},
		{"number name", `{"email":"a@example.com","password":"secret1","name":5}`, []string{"name must be a string"}},
		{"field names are exact", `{"Email":"a@example.com","password":"secret1","name":"A"}`, []string{"email must be an email"}},
		{"longest name", `{"email":"a@example.com","password":"secret1","name":"` + strings.Repeat("é", 100) + `"}`, nil},
		{"name too long", `{"email":"a@example.com","password":"secret1","name":"` + strings.Repeat("n", 101) + `"}`, []string{"name must be shorter than or equal to 100 characters"}},
		{"escape sequence in name", `{"email":"a@example.com","password":"secret1","name":"a\u001b[31mb"}`, []string{"name must not contain control characters"}},
		{"NUL in name", `{"email":"a@example.com","password":"secret1","name":"a\u0000b"}`, []string{"name must not contain control characters"}},
		{"C1 control in name", `{"email":"a@example.com","password":"secret1","name":"a\u009b2Jb"}`, []string{"name must not contain control characters"}},
		{"bidi override in name", `{"email":"a@example.com","password":"secret1","name":"\u202eevil txt.exe"}`, []string{"name must not contain control characters"}},
		{"zero-width space in name", `{"email":"a@example.com","password":"secret1","name":"Admin\u200b"}`, []string{"name must not contain control characters"}},
		{"bidi override in email", `{"email":"\"\u202eadmin\"@example.com","password":"secret1","name":"A"}`, []string{"email must be an email"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, got := ParseRegister(raw(t, tt.body))
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Fatalf("messages = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestParseLogin(t *testing.T) {
	t.Parallel()
	tests := []struct {
		body string
		want []string
	}{
		{`{"email":"a@example.com","password":"x"}`, nil},
		{`{}`, []string{"email must be an email", "password should not be empty", "password must be a string"}},
		{`{"email":"a@example.com","password":{"$gt":""}}`, []string{"password must be a string"}},
	}
	for _, tt := range tests {
		if _, got := ParseLogin(raw(t, tt.body)); fmt.Sprint(got) != fmt.Sprint(tt.want) {
			t.Errorf("ParseLogin(%s) = %q, want %q", tt.body, got, tt.want)
		}
	}
}

func TestIsEmail(t *testing.T) {
	t.Parallel()
	good := []string{"a@example.com", "first.last+tag@sub.example.co.uk", "üser@example.com", "a@xn--bcher-kva.example", "x@münchen.de"}
	bad := []string{"", "a", "a@", "@example.com", "a@example", "a@example.c", "a@example.123", "a@-example.com", "a..b@example.com",
		".a@example.com", "a b@example.com", "a@example.com.", "A <a@example.com>", "a@[127.0.0.1]", strings.Repeat("a", 65) + "@example.com"}
	for _, s := range good {
		if !IsEmail(s) {
			t.Errorf("IsEmail(%q) = false, want true", s)
		}
	}
	for _, s := range bad {
		if IsEmail(s) {
			t.Errorf("IsEmail(%q) = true, want false", s)
		}
	}
}

// Ensure register stores a Mongoose-shaped document with a bcrypt hash and no plain password.
func TestRegister_StoresMongooseShape(t *testing.T) {
	t.Parallel()
	s, db := newService(t)
	ctx := context.Background()
	res, err := s.Register(ctx, RegisterInput{Email: "  Ada@Example.com ", Password: "secret1", Name: "Ada"})
	if err != nil {
		t.Fatal(err)
	}
	if res.User.Email != "ada@example.com" || len(res.User.ID) != 24 || fmt.Sprint(res.User.Roles) != "[user]" {
		t.Fatalf("user = %+v", res.User)
	}
	var doc bson.M
	if err := db.Collection("users").FindOne(ctx, bson.M{}).Decode(&doc); err != nil {
		t.Fatal(err)
	}
	if _, ok := doc["_id"].(primitive.ObjectID); !ok {
		t.Fatalf("_id is %T, want ObjectID", doc["_id"])
	}
	hash, _ := doc["password"].(string)
	if !strings.HasPrefix(hash, "$2a$") || strings.Contains(hash, "secret1") {
		t.Fatalf("password field %q is not a bcrypt hash", hash)
	}
	for _, k := range []string{"email", "name", "roles", "createdAt", "updatedAt"} {
		if _, ok := doc[k]; !ok {
			t.Errorf("stored user lacks %q", k)
		}
	}
	c, err := s.tokens.Verify(res.AccessToken)
	if err != nil || c.ID != res.User.ID || c.Email != "ada@example.com" {
		t.Fatalf("token caller = %+v, %v", c, err)
	}
}

// Ensure 20 concurrent registrations of one e-mail give exactly one user.
func TestRegister_Race(t *testing.T) {
	t.Parallel()
	s, db := newService(t)
	ctx := context.Background()
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok, conflicts := 0, 0
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			_, err := s.Register(ctx, RegisterInput{Email: "race@example.com", Password: "secret1", Name: fmt.Sprint(i)})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				ok++
			case apperr.KindOf(err) == apperr.Conflict && err.Error() == "User with this email already exists":
				conflicts++
			default:
				t.Errorf("unexpected error: %v", err)
			}
		}(i)
	}
	wg.Wait()
	n, _ := db.Collection("users").CountDocuments(ctx, bson.M{})
	if ok != 1 || conflicts != 19 || n != 1 {
		t.Fatalf("ok=%d conflicts=%d stored=%d, want 1/19/1", ok, conflicts, n)
	}
}

// Ensure login: right password ok (e-mail case-insensitive), wrong password and unknown user
// give the same error, and the unknown-user path runs a bcrypt compare against the dummy hash.
func TestLogin(t *testing.T) {
	t.Parallel()
	s, _ := newService(t)
	ctx := context.Background()
	if _, err := s.Register(ctx, RegisterInput{Email: "grace@example.com", Password: "secret1", Name: "Grace"}); err != nil {
		t.Fatal(err)
	}
	var compared [][]byte
	var mu sync.Mutex
	real := s.compare
	s.compare = func(h, p []byte) error {
		mu.Lock()
		compared = append(compared, h)
		mu.Unlock()
		return real(h, p)
	}
	if _, err := s.Login(ctx, LoginInput{Email: "GRACE@example.com", Password: "secret1"}); err != nil {
		t.Fatalf("login: %v", err)
	}
	for _, in := range []LoginInput{{"grace@example.com", "wrong-pass"}, {"nobody@example.com", "secret1"}} {
		_, err := s.Login(ctx, in)
		if apperr.KindOf(err) != apperr.Unauthorized || err.Error() != "Invalid credentials" {
			t.Fatalf("login %v: err = %v, want Unauthorized Invalid credentials", in, err)
		}
	}
	if len(compared) != 3 || string(compared[2]) != string(s.dummyHash) {
		t.Fatalf("compares = %d (last against dummy: %v), want 3 with the unknown user against the dummy hash",
			len(compared), len(compared) == 3 && string(compared[2]) == string(s.dummyHash))
	}
}

// Ensure users written by another bcrypt implementation ($2b$, bcryptjs) and with mixed-case
// e-mails, as the NestJS service the API replaces stored them, can log in.
func TestLogin_SeedUser(t *testing.T) {
	t.Parallel()
	db := storetest.DB(t)
	ctx := context.Background()
	const seedHash = "$2b$10$bwWyiweIn1yjgrSz8IIKwO6xHIaOXOb1GooAvt8.LAwNmXN1P9pqa" // bcryptjs, "seed-password"
	id := primitive.NewObjectID()
	_, err := db.Collection("users").InsertOne(ctx, bson.M{"_id": id, "email": "Old.User@Example.com", "password": seedHash,
		"name": "Old", "roles": bson.A{"user"}, "createdAt": time.Now(), "updatedAt": time.Now(), "__v": 0})
	if err != nil {
		t.Fatal(err)
	}
	// Starting the service gives the stored user its normalized e-mail.
	s, err := New(ctx, db, NewTokens(testSecret, time.Hour), 4)
	if err != nil {
		t.Fatal(err)
	}
	var doc bson.M
	if err := db.Collection("users").FindOne(ctx, bson.M{"_id": id}).Decode(&doc); err != nil ||
		doc["emailNormalized"] != "old.user@example.com" || doc["email"] != "Old.User@Example.com" {
		t.Fatalf("stored user after start = %v, %v; want emailNormalized added, email kept", doc, err)
	}
	if _, err := s.Register(ctx, RegisterInput{Email: "OLD.user@example.com", Password: "secret1", Name: "Dup"}); apperr.KindOf(err) != apperr.Conflict {
		t.Fatalf("registering the stored e-mail in other casing: err = %v, want Conflict", err)
	}
	res, err := s.Login(ctx, LoginInput{Email: "old.user@example.com", Password: "seed-password"})
	if err != nil {
		t.Fatalf("seed user login: %v", err)
	}
	if res.User.ID != id.Hex() {
		t.Fatalf("id = %s, want %s", res.User.ID, id.Hex())
	}
	// The hash of cost 10 is now one of the configured cost (4), so that a wrong password for
	// this user takes as long as one for an unknown e-mail; the password still works.
	if err := db.Collection("users").FindOne(ctx, bson.M{"_id": id}).Decode(&doc); err != nil {
		t.Fatal(err)
	}
	hash, _ := doc["password"].(string)
	if cost, err := bcrypt.Cost([]byte(hash)); err != nil || cost != 4 || bcrypt.CompareHashAndPassword([]byte(hash), []byte("seed-password")) != nil {
		t.Fatalf("stored hash after login %q: cost %d (%v), want the password at cost 4", hash, cost, err)
	}
	if _, err := s.Login(ctx, LoginInput{Email: "old.user@example.com", Password: "seed-password"}); err != nil {
		t.Fatalf("login after the new hash: %v", err)
	}
}

// Ensure a password longer than 72 bytes never logs in, even when its first 72 bytes are the
// password (bcrypt reads no more), and still costs one comparison like any login.
func TestLogin_LongPasswordIsWrong(t *testing.T) {
	t.Parallel()
	s, _ := newService(t)
	ctx := context.Background()
	pw := strings.Repeat("a", 72)
	if _, err := s.Register(ctx, RegisterInput{Email: "long@example.com", Password: pw, Name: "Long"}); err != nil {
		t.Fatal(err)
	}
	compares := 0
	real := s.compare
	s.compare = func(h, p []byte) error { compares++; return real(h, p) }
	for _, tc := range []struct {
		password string
		ok       bool
	}{{pw, true}, {pw + "X", false}, {pw + strings.Repeat("garbage", 1000), false}} {
		_, err := s.Login(ctx, LoginInput{Email: "long@example.com", Password: tc.password})
		if (err == nil) != tc.ok || (err != nil && apperr.KindOf(err) != apperr.Unauthorized) {
			t.Errorf("login with %d bytes: err = %v, want ok %v", len(tc.password), err, tc.ok)
		}
	}
	if compares != 3 {
		t.Errorf("%d comparisons for 3 logins, want one each", compares)
	}
}

// Ensure profile follows the stored user and fails once it is deleted.
func TestProfile(t *testing.T) {
	t.Parallel()
	s, db := newService(t)
	ctx := context.Background()
	res, _ := s.Register(ctx, RegisterInput{Email: "p@example.com", Password: "secret1", Name: "P"})
	if v, err := s.Profile(ctx, res.User.ID); err != nil || v.Email != "p@example.com" {
		t.Fatalf("profile = %+v, %v", v, err)
	}
	_, _ = db.Collection("users").DeleteMany(ctx, bson.M{})
	if _, err := s.Profile(ctx, res.User.ID); apperr.KindOf(err) != apperr.Unauthorized {
		t.Fatalf("deleted user's profile err = %v, want Unauthorized", err)
	}
	if _, err := s.Profile(ctx, "not-hex"); apperr.KindOf(err) != apperr.Unauthorized {
		t.Fatalf("bad id err = %v, want Unauthorized", err)
	}
}

// Ensure grant and revoke change roles, idempotently, and name unknown users.
func TestGrantRevoke(t *testing.T) {
	t.Parallel()
	s, _ := newService(t)
	ctx := context.Background()
	_, _ = s.Register(ctx, RegisterInput{Email: "r@example.com", Password: "secret1", Name: "R"})
	for i := 0; i < 2; i++ {
		v, err := s.Grant(ctx, "R@example.com", "admin")
		if err != nil || fmt.Sprint(v.Roles) != "[user admin]" {
			t.Fatalf("grant #%d: %+v, %v", i, v, err)
		}
	}
	v, err := s.Revoke(ctx, "r@example.com", "admin")
	if err != nil || fmt.Sprint(v.Roles) != "[user]" {
		t.Fatalf("revoke: %+v, %v", v, err)
	}
	if _, err := s.Grant(ctx, "r@example.com", "superuser"); apperr.KindOf(err) != apperr.Invalid || !strings.Contains(err.Error(), "admin, user") {
		t.Fatalf("unknown role err = %v, want Invalid listing the known roles", err)
	}
	s.AddRoles("auditor")
	if v, err := s.Grant(ctx, "r@example.com", "auditor"); err != nil || fmt.Sprint(v.Roles) != "[user auditor]" {
		t.Fatalf("grant of a configured role: %+v, %v", v, err)
	}
	_, _ = s.Revoke(ctx, "r@example.com", "auditor")
	_, err = s.Grant(ctx, "ghost@example.com", "admin")
	if apperr.KindOf(err) != apperr.NotFound || !strings.Contains(err.Error(), "ghost@example.com") {
		t.Fatalf("unknown user err = %v", err)
	}
	if u, err := s.UserByEmail(ctx, "R@Example.com"); err != nil || u.Email != "r@example.com" {
		t.Fatalf("UserByEmail = %+v, %v", u, err)
	}
	if _, err := s.UserByEmail(ctx, "ghost@example.com"); apperr.KindOf(err) != apperr.NotFound ||
		!strings.Contains(err.Error(), "ghost@example.com") {
		t.Fatalf("UserByEmail(unknown) err = %v", err)
	}
	list, err := s.List(ctx)
	if err != nil || len(list) != 1 || list[0].Email != "r@example.com" {
		t.Fatalf("list = %+v, %v", list, err)
	}
}

// Ensure every kind of bad token is refused.
func TestTokens_Verify(t *testing.T) {
	t.Parallel()
	tok := NewTokens(testSecret, time.Hour)
	good, _ := tok.Issue(Caller{ID: "64b000000000000000000001", Email: "a@example.com", Roles: []string{"user"}})
	sign := func(m jwt.SigningMethod, key any, c jwt.MapClaims) string {
		s, err := jwt.NewWithClaims(m, c).SignedString(key)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	now := time.Now()
	valid := jwt.MapClaims{"sub": "u1", "iat": now.Unix(), "exp": now.Add(time.Hour).Unix()}
	tests := []struct {
		name  string
		token string
	}{
		{"garbage", "this-is-not-a-jwt"},
		{"wrong key", sign(jwt.SigningMethodHS256, []byte("another-secret-another-secret-xx"), valid)},
		{"HS512", sign(jwt.SigningMethodHS512, testSecret, valid)},
		{"alg none", sign(jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, valid)},
		{"expired", sign(jwt.SigningMethodHS256, testSecret, jwt.MapClaims{"sub": "u1", "iat": now.Add(-2 * time.Hour).Unix(), "exp": now.Add(-time.Hour).Unix()})},
		{"no exp", sign(jwt.SigningMethodHS256, testSecret, jwt.MapClaims{"sub": "u1", "iat": now.Unix()})},
		{"no sub", sign(jwt.SigningMethodHS256, testSecret, jwt.MapClaims{"iat": now.Unix(), "exp": now.Add(time.Hour).Unix()})},
		{"tampered", good[:len(good)-2] + "xx"},
		{"many dots", strings.Repeat(".", 10000)},
	}
	for _, tt := range tests {
		if _, err := tok.Verify(tt.token); !errors.Is(err, ErrInvalidToken) {
			t.Errorf("%s: err = %v, want ErrInvalidToken", tt.name, err)
		}
	}
	c, err := tok.Verify(good)
	if err != nil || c.ID != "64b000000000000000000001" || !c.HasRole("user") || c.HasRole("admin") {
		t.Fatalf("good token: %+v, %v", c, err)
	}
}

// Ensure the generated secret is kept (mode 0600) and reused.
func TestLoadOrCreateSecret(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	a, created, err := LoadOrCreateSecret(dir)
	if err != nil || !created || len(a) < 32 {
		t.Fatalf("first: %d bytes created=%v err=%v", len(a), created, err)
	}
	b, created, err := LoadOrCreateSecret(dir)
	if err != nil || created || string(a) != string(b) {
		t.Fatalf("second: created=%v same=%v err=%v", created, string(a) == string(b), err)
	}
}

// Ensure a secret file that cannot be read is named once in the error: os.ReadFile's error
// already says "read PATH".
func TestLoadOrCreateSecret_UnreadableNamedOnce(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, SecretFile)
	if err := os.Mkdir(path, 0o700); err != nil {
		t.Fatal(err)
	}
	_, _, err := LoadOrCreateSecret(dir)
	if err == nil || strings.Count(err.Error(), path) != 1 {
		t.Fatalf("err = %v, want one naming %s once", err, path)
	}
}

// Ensure a cached verified token still expires.
func TestTokens_CacheHonoursExpiry(t *testing.T) {
	t.Parallel()
	tok := NewTokens(testSecret, time.Minute)
	now := time.Now()
	tok.now = func() time.Time { return now }
	s, _ := tok.Issue(Caller{ID: "u1"})
	for i := 0; i < 2; i++ { // second call is served by the cache
		if _, err := tok.Verify(s); err != nil {
			t.Fatalf("verify #%d: %v", i, err)
		}
	}
	now = now.Add(2 * time.Minute)
	if _, err := tok.Verify(s); !errors.Is(err, ErrInvalidToken) {
		t.Fatalf("expired cached token: err = %v, want ErrInvalidToken", err)
	}
}

// Ensure the verified-token cache keeps the tokens in use: after maxVerified other tokens were
// verified, a token used all along is still answered from the cache (it verifies even once the
// secret has changed), and the first of the others was forgotten (it no longer does).
func TestTokens_CacheKeepsTokensInUse(t *testing.T) {
	t.Parallel()
	tok := NewTokens(testSecret, time.Hour)
	verify := func(c Caller) string {
		t.Helper()
		s, err := tok.Issue(c)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tok.Verify(s); err != nil {
			t.Fatalf("verify %s: %v", c.ID, err)
		}
		return s
	}
	inUse := verify(Caller{ID: "in-use"})
	first := verify(Caller{ID: "other-0"})
	for i := 1; i <= maxVerified; i++ {
		verify(Caller{ID: fmt.Sprintf("other-%d", i)})
		if i%1000 == 0 {
			if _, err := tok.Verify(inUse); err != nil {
				t.Fatal(err)
			}
		}
	}
	tok.secret = []byte("another secret, another MAC: only cached tokens pass")
	if c, err := tok.Verify(inUse); err != nil || c.ID != "in-use" {
		t.Errorf("token in use: %+v, %v; want it answered from the cache", c, err)
	}
	if _, err := tok.Verify(first); !errors.Is(err, ErrInvalidToken) {
		t.Errorf("first of %d other tokens: err = %v, want it forgotten (ErrInvalidToken)", maxVerified, err)
	}
}

// Ensure Current answers the stored user's roles, not the token's, and that a deletion or a
// role change applies once the cache entry is CallerCacheTTL old (never later).
func TestCurrent_FollowsTheAccount(t *testing.T) {
	t.Parallel()
	s, db := newService(t)
	ctx := context.Background()
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s.now = func() time.Time { return clock }
	res, err := s.Register(ctx, RegisterInput{Email: "c@example.com", Password: "secret1", Name: "C"})
	if err != nil {
		t.Fatal(err)
	}
	id := res.User.ID
	c, err := s.Current(ctx, id)
	if err != nil || fmt.Sprint(c.Roles) != "[user]" || c.Email != "c@example.com" {
		t.Fatalf("Current = %+v, %v", c, err)
	}
	// Another process (the CLI) grants admin: seen once the entry expires.
	oid, _ := primitive.ObjectIDFromHex(id)
	if _, err := db.Collection("users").UpdateOne(ctx, bson.M{"_id": oid}, bson.M{"$addToSet": bson.M{"roles": "admin"}}); err != nil {
		t.Fatal(err)
	}
	clock = clock.Add(CallerCacheTTL - time.Second)
	if c, _ := s.Current(ctx, id); c.HasRole("admin") {
		t.Fatalf("role seen before the cache entry expired (cache not used)")
	}
	clock = clock.Add(time.Second)
	if c, _ := s.Current(ctx, id); !c.HasRole("admin") {
		t.Fatalf("granted role not seen after %s: %+v", CallerCacheTTL, c)
	}
	// A change through this service applies at once.
	if _, err := s.Revoke(ctx, "c@example.com", "admin"); err != nil {
		t.Fatal(err)
	}
	if c, _ := s.Current(ctx, id); c.HasRole("admin") {
		t.Fatalf("revoked role still held: %+v", c)
	}
	// Deleted: Unauthorized after at most the TTL.
	if _, err := db.Collection("users").DeleteOne(ctx, bson.M{"_id": oid}); err != nil {
		t.Fatal(err)
	}
	clock = clock.Add(CallerCacheTTL)
	if _, err := s.Current(ctx, id); apperr.KindOf(err) != apperr.Unauthorized {
		t.Fatalf("deleted user: err = %v, want Unauthorized", err)
	}
	for _, bad := range []string{"not-hex", primitive.NewObjectID().Hex()} {
		if _, err := s.Current(ctx, bad); apperr.KindOf(err) != apperr.Unauthorized {
			t.Errorf("Current(%q) err = %v, want Unauthorized", bad, err)
		}
	}
}

// Ensure the normalized e-mail a login looks up is indexed where the server reads indexes, and that a known and an unknown
// e-mail cost the same single bcrypt compare.
func TestLogin_OneIndexedLookup(t *testing.T) {
	t.Parallel()
	s, db := newService(t)
	ctx := context.Background()
	if _, err := s.Register(ctx, RegisterInput{Email: "one@example.com", Password: "secret1", Name: "One"}); err != nil {
		t.Fatal(err)
	}
	cur, err := db.Collection("users").Indexes().List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var idx []bson.M
	if err := cur.All(ctx, &idx); err != nil {
		t.Fatal(err)
	}
	// The embedded store reads no index but _id's, so it gets none (see store.EnsureIndexes).
	if store.ReadsSecondaryIndexes(ctx, db.Collection("users")) && !strings.Contains(fmt.Sprint(idx), "emailNormalized_1") {
		t.Fatalf("indexes %v lack emailNormalized_1", idx)
	}
	calls := 0
	var mu sync.Mutex
	real := s.compare
	s.compare = func(h, p []byte) error { mu.Lock(); calls++; mu.Unlock(); return real(h, p) }
	for _, email := range []string{"ONE@example.com", "nobody@example.com"} {
		_, _ = s.Login(ctx, LoginInput{Email: email, Password: "wrong-pass"})
	}
	if calls != 2 {
		t.Fatalf("bcrypt compares = %d, want one per login (known and unknown e-mail)", calls)
	}
}
