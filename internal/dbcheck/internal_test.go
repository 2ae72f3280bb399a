package dbcheck

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/bson/primitive"
	"go.mongodb.org/mongo-driver/mongo/address"
	"go.mongodb.org/mongo-driver/mongo/description"
	"go.mongodb.org/mongo-driver/x/mongo/driver/topology"

	"github.com/acme/app/internal/apperr"
)

// Ensure every class of non-public address is recognised, and public ones are not.
func TestNonPublic(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"127.0.0.1": "loopback", "127.9.9.9": "loopback", "::1": "loopback", "::ffff:127.0.0.1": "loopback",
		"10.0.0.1": "private", "172.16.5.4": "private", "192.168.1.1": "private", "fd00::1": "private",
		"169.254.169.254": "link-local", "fe80::1": "link-local",
		"0.0.0.0": "unspecified", "::": "unspecified", "0.1.2.3": "unspecified",
		"224.0.0.1": "multicast", "ff02::1": "multicast",
		"100.64.0.1": "shared (carrier-grade NAT)", "240.0.0.1": "reserved", "255.255.255.255": "reserved",
		"64:ff9b::a9fe:a9fe": "link-local", "2002:7f00:1::": "loopback",
		"8.8.8.8": "", "1.1.1.1": "", "2606:4700:4700::1111": "",
		// IPv6 forms carrying an IPv4 address, and deprecated or local-use ranges.
		"::127.0.0.1": "loopback", "::10.1.2.3": "private", "::ffff:0:127.0.0.1": "loopback",
		"::ffff:0:192.168.0.1": "private", "64:ff9b::127.0.0.1": "loopback", "64:ff9b::10.0.0.1": "private",
		"64:ff9b:1::a00:1": "local-use NAT64", "64:ff9b:1:ffff::8.8.8.8": "local-use NAT64",
		"2001:0:4136:e378:8000:63bf:3f57:fefe": "private",  // Teredo, client 192.168.1.1 (inverted)
		"2001:0:7f00:1::":                      "loopback", // Teredo, server 127.0.0.1
		"fec0::1":                              "site-local", "feff::1": "site-local",
		"::8.8.8.8": "", "64:ff9b::8.8.8.8": "", "2001:0:4136:e378:8000:63bf:f7f7:f7f7": "",
	}
	for addr, want := range cases {
		if got := nonPublic(netip.MustParseAddr(addr)); got != want {
			t.Errorf("nonPublic(%s) = %q, want %q", addr, got, want)
		}
	}
}

// Ensure the dialer checks the address it actually connects to: a host name that is not
// listed but resolves to loopback is refused at dial time (the path SRV targets and DNS
// rebinding take), and the refusal is remembered for the 403.
func TestDialer_ChecksResolvedAddress(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	cases := []struct {
		name    string
		allowed []string
		host    string
		wantErr bool
	}{
		{"NameResolvingToLoopback", nil, "localhost", true},
		{"LiteralLoopback", nil, "127.0.0.1", true},
		{"ListedName", []string{"localhost"}, "localhost", false},
		{"ListedAddressOfName", []string{"127.0.0.1", "::1"}, "localhost", false},
		{"ListedCIDR", []string{"127.0.0.0/8"}, "127.0.0.1", false},
	}
	for _, tc := range cases {
		p, err := newPolicy(tc.allowed, false)
		if err != nil {
			t.Fatal(err)
		}
		d := &dialer{policy: p, timeout: 5 * time.Second}
		conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(tc.host, port))
		if conn != nil {
			conn.Close()
		}
		var b *BlockedError
		if tc.wantErr {
			if !errors.As(err, &b) || b.Reason != "loopback" || d.blocked.Load() == nil {
				t.Errorf("%s: err = %v, want a loopback BlockedError remembered by the dialer", tc.name, err)
			}
			continue
		}
		if err != nil || d.blocked.Load() != nil {
			t.Errorf("%s: err = %v, want a connection", tc.name, err)
		}
	}
}

// Ensure clusterName's fallback is the first host, or an SRV address's first label.
func TestFirstHost(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"mongodb://127.0.0.1:27017/":                           "127.0.0.1",
		"mongodb://u:p@a.example.com:1,b.example.com:2/db?x=1": "a.example.com",
		"mongodb://u:p%40x@h/":                                 "h",
		"mongodb://[::1]:27017":                                "::1",
		"mongodb://host":                                       "host",
		"mongodb+srv://u:p@cluster0.ab1cd.mongodb.net/?w=1":    "cluster0",
	}
	for uri, want := range cases {
		if got := firstHost(uri); got != want {
			t.Errorf("firstHost(%s) = %q, want %q", uri, got, want)
		}
	}
}

// Ensure _id values of every common type become strings.
func TestIDString(t *testing.T) {
	t.Parallel()
	oid := primitive.NewObjectID()
	cases := []struct {
		v    any
		want string
	}{
		{oid, oid.Hex()},
		{"abc", "abc"},
		{int32(7), "7"},
		{int64(1 << 40), "1099511627776"},
		{1.5, "1.5"},
		{bson.D{{Key: "a", Value: 1}}, `{"a":1}`},
	}
	for _, tc := range cases {
		raw, err := bson.Marshal(bson.D{{Key: "_id", Value: tc.v}})
		if err != nil {
			t.Fatal(err)
		}
		if got := idString(bson.Raw(raw).Lookup("_id")); got != tc.want {
			t.Errorf("idString(%v) = %q, want %q", tc.v, got, tc.want)
		}
	}
}

// Ensure the cache is bounded, closes idle clients, and never closes a client in use.
func TestCache_BoundAndIdle(t *testing.T) {
	t.Parallel()
	s, err := New(Options{CacheSize: 2, IdleTimeout: time.Hour, AllowedHosts: []string{"0.0.0.0/0"}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	now := time.Now()
	s.cache.mu.Lock()
	s.cache.now = func() time.Time { return now }
	s.cache.mu.Unlock()
	ctx := context.Background()
	acquire := func(uri string) *entry {
		e, _, err := s.cache.acquire(uri, func() (*entry, error) { return s.connect(ctx, uri) })
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	a := acquire("mongodb://192.0.2.1:1/") // held
	b := acquire("mongodb://192.0.2.2:1/")
	s.cache.release(b)
	c := acquire("mongodb://192.0.2.3:1/")
	s.cache.release(c)
	if n := s.cache.len(); n != 2 {
		t.Fatalf("cache holds %d clients, want the bound 2", n)
	}
	// a was the least recently used: evicted while in use, it is closed by its release.
	if !a.evicted || b.evicted || c.evicted {
		t.Fatalf("evicted a=%v b=%v c=%v, want only a (the least recently used)", a.evicted, b.evicted, c.evicted)
	}
	s.cache.release(a)
	// Idle expiry: everything released and an hour later the sweep empties the cache.
	s.cache.mu.Lock()
	now = now.Add(2 * time.Hour)
	s.cache.mu.Unlock()
	s.cache.sweep()
	if n := s.cache.len(); n != 0 {
		t.Fatalf("cache holds %d clients after the idle timeout, want 0", n)
	}
	if err := s.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if _, _, err := s.cache.acquire("mongodb://192.0.2.9:1/", func() (*entry, error) { return s.connect(ctx, "mongodb://192.0.2.9:1/") }); err == nil {
		t.Fatal("acquire after Close succeeded, want an error")
	}
}

// Ensure a filter parsed by ParseQuery is reused by the validation Query runs, and parsed
// again when Filter was changed in between.
func TestQueryInput_FilterParsedOnce(t *testing.T) {
	t.Parallel()
	in, msgs := parseQuery(map[string]json.RawMessage{
		"connectionString": json.RawMessage(`"mongodb://h"`), "database": json.RawMessage(`"d"`),
		"collection": json.RawMessage(`"c"`), "filter": json.RawMessage(`{"a":1}`),
	}, 10)
	if len(msgs) > 0 || in.filter == nil {
		t.Fatalf("parseQuery: msgs %v, filter %v", msgs, in.filter)
	}
	parsed := in.filter
	if msgs := in.validate(10); len(msgs) > 0 || &in.filter[0] != &parsed[0] {
		t.Fatalf("validate: msgs %v; filter parsed again", msgs)
	}
	in.Filter = []byte(`{"b":2}`)
	if msgs := in.validate(10); len(msgs) > 0 || in.filter.Lookup("b").Int32() != 2 {
		t.Fatalf("validate after a new Filter: msgs %v, filter %v", msgs, in.filter)
	}
	in.Filter = []byte(`{"$where":"1"}`)
	if msgs := in.validate(10); len(msgs) != 1 {
		t.Fatalf("validate of a refused filter: msgs %v", msgs)
	}
}

// Ensure any text given as a query filter either is refused or becomes a document that holds,
// at any depth, none of the server-side JavaScript operators and no JavaScript value, and
// that nothing panics. The accepted document is walked here through bson.Unmarshal, not
// through the checker under test.
func FuzzParseFilter(f *testing.F) {
	for _, s := range []string{`{}`, `null`, `{"a":1}`, `{"$where":"1"}`, `{"$or":[{"$where":"x"}]}`,
		`{"a":{"$code":"x"}}`, `{"$expr":{"$function":{"body":"x","args":[],"lang":"js"}}}`,
		`{"d":{"$date":"2026-01-01T00:00:00Z"}}`, `{"_id":{"$oid":"64b000000000000000000001"}}`, `[[[[`,
		`{"password":{"$regex":"^x"}}`, `{"$or":[{"a":{"$elemMatch":{"password.b":1}}}]}`, `{"$expr":{"$eq":["$password","x"]}}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		raw, err := parseFilter([]byte(text))
		if err != nil {
			var fe *filterError
			if !errors.As(err, &fe) {
				t.Fatalf("%q: error %T %v is not a client-safe filterError", text, err, err)
			}
			return
		}
		var d bson.D
		if err := bson.Unmarshal(raw, &d); err != nil {
			t.Fatalf("%q: accepted, but the result does not read back: %v", text, err)
		}
		if bad := javaScriptIn(d, 0); bad != "" {
			t.Fatalf("%q: accepted with %s", text, bad)
		}
		// On a collection with a secret field, the filter is refused exactly when it names the
		// field (or a path into it) or uses $expr or $jsonSchema, at any depth.
		err = checkSecretFilter(raw, "users", []string{"password"})
		if want := namesSecret(d, 0); (err != nil) != want || (err != nil && apperr.KindOf(err) != apperr.Forbidden) {
			t.Fatalf("%q: names the secret: %v, checkSecretFilter: %v", text, want, err)
		}
	})
}

// namesSecret reports whether v holds, at any depth, the key password, a path into it, $expr
// or $jsonSchema.
func namesSecret(v any, depth int) bool {
	if depth > 200 {
		return false
	}
	switch x := v.(type) {
	case bson.D:
		for _, e := range x {
			if e.Key == "password" || strings.HasPrefix(e.Key, "password.") || e.Key == "$expr" || e.Key == "$jsonSchema" ||
				namesSecret(e.Value, depth+1) {
				return true
			}
		}
	case bson.A:
		for _, e := range x {
			if namesSecret(e, depth+1) {
				return true
			}
		}
	}
	return false
}

// javaScriptIn names the first server-side JavaScript in v (a refused operator or a
// JavaScript value), or returns "".
func javaScriptIn(v any, depth int) string {
	if depth > 200 {
		return "nesting past 200 levels"
	}
	switch x := v.(type) {
	case bson.D:
		for _, e := range x {
			if e.Key == "$where" || e.Key == "$function" || e.Key == "$accumulator" {
				return "the operator " + e.Key
			}
			if bad := javaScriptIn(e.Value, depth+1); bad != "" {
				return bad
			}
		}
	case bson.A:
		for _, e := range x {
			if bad := javaScriptIn(e, depth+1); bad != "" {
				return bad
			}
		}
	case primitive.JavaScript, primitive.CodeWithScope:
		return "a JavaScript value"
	}
	return ""
}

// Ensure a server selection failure names every server tried, also one whose first attempt
// had not ended when the time ran out (its last error still unset), and redacts the password.
func TestDescribe_SelectionNamesEveryServer(t *testing.T) {
	t.Parallel()
	s := &Service{}
	const uri = "mongodb://u:hunter2hunter2@db1:27017,db2:27017/"
	err := topology.ServerSelectionError{Wrapped: context.DeadlineExceeded, Desc: description.Topology{Servers: []description.Server{
		{Addr: address.Address("db1:27017"), LastError: errors.New("connection refused")},
		{Addr: address.Address("db2:27017")},
	}}}
	got := s.describe(err, uri, 500*time.Millisecond)
	want := "no server could be reached within 500ms (db1:27017: connection refused; db2:27017: no answer)"
	if got != want {
		t.Errorf("describe = %q, want %q", got, want)
	}
}
