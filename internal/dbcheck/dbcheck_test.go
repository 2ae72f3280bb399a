package dbcheck_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/bson/primitive"
	"go.mongodb.org/mongo-driver/event"

	"github.com/acme/app/internal/apperr"
	"github.com/acme/app/internal/dbcheck"
	"github.com/acme/app/internal/memlimit"
	"github.com/acme/app/internal/store/storetest"
)

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// newService returns a Service that may reach loopback (the embedded store), closed after the test.
func newService(t testing.TB, o dbcheck.Options) *dbcheck.Service {
	t.Helper()
	if o.AllowedHosts == nil {
		o.AllowedHosts = []string{"127.0.0.1"}
	}
	s, err := dbcheck.New(o)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	return s
}

func storeURI(t testing.TB) string { return storetest.Store(t).URI() }

func intp(n int) *int { return &n }

func wantKind(t *testing.T, err error, kind apperr.Kind, contains string) {
	t.Helper()
	if err == nil {
		t.Fatalf("err = nil, want kind %v containing %q", kind, contains)
	}
	if got := apperr.KindOf(err); got != kind {
		t.Fatalf("kind = %v (%v), want %v", got, err, kind)
	}
	e := apperr.As(err)
	if msg := strings.Join(e.Messages, " | "); !strings.Contains(msg, contains) {
		t.Fatalf("messages %q do not contain %q", msg, contains)
	}
}

// Ensure a test against the embedded store answers the full success shape.
func TestTest_OK(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	db := storetest.DB(t)
	if _, err := db.Collection("c").InsertOne(ctx, bson.M{"x": 1}); err != nil {
		t.Fatal(err)
	}
	s := newService(t, dbcheck.Options{})
	res, err := s.Test(ctx, dbcheck.TestInput{ConnectionString: storeURI(t), Database: db.Name()})
	if err != nil {
		t.Fatalf("Test: %v", err)
	}
	if !res.Success || res.Error != "" {
		t.Fatalf("result = %+v, want success", res)
	}
	if res.Version == "" || res.Latency < 0 || res.ClusterName != "127.0.0.1" {
		t.Fatalf("result = %+v, want version, latency >= 0 and clusterName 127.0.0.1", res)
	}
	if !slices.Contains(res.Databases, db.Name()) {
		t.Fatalf("databases %v lack %s", res.Databases, db.Name())
	}
	body, _ := json.Marshal(res)
	var shape map[string]any
	_ = json.Unmarshal(body, &shape)
	for _, k := range []string{"success", "clusterName", "version", "latency", "databases"} {
		if _, ok := shape[k]; !ok {
			t.Errorf("JSON %s lacks %q", body, k)
		}
	}
	if _, ok := shape["error"]; ok {
		t.Errorf("JSON %s of a success has error", body)
	}
}

// Ensure an unreachable server is a result with success false, well before the driver's 30 s default.
func TestTest_Unreachable(t *testing.T) {
	t.Parallel()
	s := newService(t, dbcheck.Options{Timeout: 3 * time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	type answer struct {
		res *dbcheck.TestResult
		err error
	}
	done := make(chan answer, 1)
	go func() {
		res, err := s.Test(ctx, dbcheck.TestInput{ConnectionString: "mongodb://127.0.0.1:1/?serverSelectionTimeoutMS=500", Database: "admin"})
		done <- answer{res, err}
	}()
	var a answer
	select {
	case a = <-done:
	case <-time.After(15 * time.Second):
		t.Fatal("no answer within 15s for an unreachable server")
	}
	if a.err != nil {
		t.Fatalf("err = %v, want a result", a.err)
	}
	if a.res.Success || !strings.Contains(a.res.Error, "127.0.0.1:1") {
		t.Fatalf("result = %+v, want success false naming 127.0.0.1:1", a.res)
	}
	body, _ := json.Marshal(a.res)
	var shape map[string]any
	_ = json.Unmarshal(body, &shape)
	keys := slices.Sorted(maps.Keys(shape))
	if !slices.Equal(keys, []string{"error", "latency", "success"}) {
		t.Fatalf("JSON = %s, want exactly success, error, latency", body)
	}
}

// Ensure the password of a connection string appears neither in answers nor in logs.
func TestRedaction(t *testing.T) {
	t.Parallel()
	const secret = "s3cretPassw0rd"
	var logs bytes.Buffer
	var mu sync.Mutex
	logger := slog.New(slog.NewTextHandler(&lockedWriter{w: &logs, mu: &mu}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	s := newService(t, dbcheck.Options{Logger: logger, Timeout: 2 * time.Second})
	ctx := ctxT(t)

	cases := []struct {
		name string
		uri  string
	}{
		{"Unreachable", "mongodb://admin:" + secret + "@127.0.0.1:1/?serverSelectionTimeoutMS=300"},
		{"Unparsable", "mongodb://admin:" + secret + "@127.0.0.1:notaport/"},
		{"BadOption", "mongodb://admin:" + secret + "@127.0.0.1:1/?w=banana&wtimeoutMS=x"},
		{"Refused", "mongodb://admin:" + secret + "@127.0.0.1:1/?authMechanism=MONGODB-AWS"},
		{"Encoded", "mongodb://admin:" + url.QueryEscape(secret+"/#") + "@127.0.0.1:notaport/"},
		// Not valid in a URI, yet typed: a space and quotes, and an unescaped "@" and "/", which
		// the driver would split at, looking the rest of the password up as a host.
		{"SpaceAndQuotes", "mongodb://admin:" + secret + ` x'y"@127.0.0.1:1/?serverSelectionTimeoutMS=300`},
		{"UnescapedAt", "mongodb://admin:Sup3r@" + secret + "/more@127.0.0.1:1/?serverSelectionTimeoutMS=300"},
	}
	shows := func(text string) bool { return strings.Contains(strings.ToLower(text), strings.ToLower(secret)) }
	for _, tc := range cases {
		res, err := s.Test(ctx, dbcheck.TestInput{ConnectionString: tc.uri, Database: "admin"})
		text := fmt.Sprint(err)
		if res != nil {
			b, _ := json.Marshal(res)
			text += string(b)
		}
		if e := apperr.As(err); e != nil {
			text += strings.Join(e.Messages, " ")
		}
		if shows(text) {
			t.Errorf("%s: answer shows the password: %s", tc.name, text)
		}
		if _, err := s.Query(ctx, dbcheck.QueryInput{ConnectionString: tc.uri, Database: "admin", Collection: "c"}); shows(fmt.Sprint(err)) {
			t.Errorf("%s: query error shows the password: %v", tc.name, err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if logs.Len() == 0 {
		t.Fatal("nothing was logged: the log check would prove nothing")
	}
	if shows(logs.String()) {
		t.Fatalf("logs show the password:\n%s", logs.String())
	}
}

type lockedWriter struct {
	w  *bytes.Buffer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// seed inserts docs into a fresh database and returns its name.
func seed(t *testing.T, docs ...any) string {
	t.Helper()
	db := storetest.DB(t)
	if len(docs) > 0 {
		if _, err := db.Collection("items").InsertMany(ctxT(t), docs); err != nil {
			t.Fatalf("seed: %v", err)
		}
	}
	return db.Name()
}

// Ensure Extended JSON filters work ($oid, $date), and documents come back as relaxed
// Extended JSON with _id as a string.
func TestQuery_ExtendedJSON(t *testing.T) {
	t.Parallel()
	id1, id2 := primitive.NewObjectID(), primitive.NewObjectID()
	jan := time.Date(2024, 1, 15, 10, 0, 0, 0, time.UTC)
	jun := time.Date(2024, 6, 15, 10, 0, 0, 0, time.UTC)
	dbName := seed(t,
		bson.D{{Key: "_id", Value: id1}, {Key: "name", Value: "jan"}, {Key: "at", Value: jan}, {Key: "n", Value: int64(7)}},
		bson.D{{Key: "_id", Value: id2}, {Key: "name", Value: "jun"}, {Key: "at", Value: jun}, {Key: "n", Value: int64(8)}},
		bson.D{{Key: "_id", Value: "plain"}, {Key: "name", Value: "str"}},
		bson.D{{Key: "_id", Value: int32(42)}, {Key: "name", Value: "int"}},
	)
	s := newService(t, dbcheck.Options{})
	ctx := ctxT(t)
	cases := []struct {
		name      string
		filter    string
		wantNames []string
	}{
		{"ByOID", fmt.Sprintf(`{"_id": {"$oid": %q}}`, id2.Hex()), []string{"jun"}},
		{"ByDate", `{"at": {"$gte": {"$date": "2024-03-01T00:00:00Z"}}}`, []string{"jun"}},
		{"ByCanonicalDate", `{"at": {"$lt": {"$date": {"$numberLong": "1709251200000"}}}}`, []string{"jan"}},
		{"ByStringID", `{"_id": "plain"}`, []string{"str"}},
		{"All", ``, []string{"jan", "jun", "str", "int"}},
		{"Null", `null`, []string{"jan", "jun", "str", "int"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, err := s.Query(ctx, dbcheck.QueryInput{ConnectionString: storeURI(t), Database: dbName, Collection: "items", Filter: []byte(tc.filter)})
			if err != nil {
				t.Fatalf("Query: %v", err)
			}
			var names []string
			for _, d := range res.Documents {
				var m map[string]any
				if err := json.Unmarshal(d, &m); err != nil {
					t.Fatalf("document %s: %v", d, err)
				}
				if _, ok := m["_id"].(string); !ok {
					t.Errorf("document %s: _id is not a string", d)
				}
				names = append(names, m["name"].(string))
			}
			slices.Sort(names)
			want := slices.Sorted(slices.Values(tc.wantNames))
			if !slices.Equal(names, want) || res.Count != len(want) || !res.Success {
				t.Fatalf("names = %v count %d, want %v", names, res.Count, want)
			}
		})
	}

	// The exact shape of one document: field order kept, relaxed dates and numbers.
	res, err := s.Query(ctx, dbcheck.QueryInput{ConnectionString: storeURI(t), Database: dbName, Collection: "items",
		Filter: []byte(fmt.Sprintf(`{"_id": {"$oid": %q}}`, id1.Hex()))})
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf(`{"_id":%q,"name":"jan","at":{"$date":"2024-01-15T10:00:00Z"},"n":7}`, id1.Hex())
	if got := string(res.Documents[0]); got != want {
		t.Fatalf("document = %s\nwant       %s", got, want)
	}
	res, _ = s.Query(ctx, dbcheck.QueryInput{ConnectionString: storeURI(t), Database: dbName, Collection: "items", Filter: []byte(`{"name":"int"}`)})
	if got := string(res.Documents[0]); got != `{"_id":"42","name":"int"}` {
		t.Fatalf("int _id document = %s", got)
	}
}

// Ensure an unknown database or collection is an empty result, not an error.
func TestQuery_Unknown(t *testing.T) {
	t.Parallel()
	s := newService(t, dbcheck.Options{})
	for _, in := range []dbcheck.QueryInput{
		{Database: "no_such_db_x1", Collection: "items"},
		{Database: seed(t, bson.M{"a": 1}), Collection: "nothing"},
	} {
		in.ConnectionString = storeURI(t)
		res, err := s.Query(ctxT(t), in)
		if err != nil {
			t.Fatalf("Query(%s.%s): %v", in.Database, in.Collection, err)
		}
		if !res.Success || res.Count != 0 || res.Documents == nil || len(res.Documents) != 0 {
			t.Fatalf("Query(%s.%s) = %+v, want an empty success", in.Database, in.Collection, res)
		}
		if b, _ := json.Marshal(res); !strings.Contains(string(b), `"documents":[]`) {
			t.Fatalf("JSON %s: documents must be []", b)
		}
	}
}

// Ensure the limit defaults to 100, is bounded by 1 and max_limit, and the answer is capped in bytes.
func TestQuery_LimitsAndCaps(t *testing.T) {
	t.Parallel()
	docs := make([]any, 150)
	for i := range docs {
		docs[i] = bson.M{"n": i, "pad": strings.Repeat("x", 100)}
	}
	dbName := seed(t, docs...)
	ctx := ctxT(t)
	s := newService(t, dbcheck.Options{MaxLimit: 120})
	base := dbcheck.QueryInput{ConnectionString: storeURI(t), Database: dbName, Collection: "items"}

	cases := []struct {
		name      string
		limit     *int
		wantCount int
		wantErr   string
	}{
		{"Default", nil, 100, ""},
		{"One", intp(1), 1, ""},
		{"Max", intp(120), 120, ""},
		{"Zero", intp(0), 0, "limit must not be less than 1"},
		{"Negative", intp(-5), 0, "limit must not be less than 1"},
		{"OverMax", intp(121), 0, "limit must not be greater than 120"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := base
			in.Limit = tc.limit
			res, err := s.Query(ctx, in)
			if tc.wantErr != "" {
				wantKind(t, err, apperr.Invalid, tc.wantErr)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.Count != tc.wantCount || len(res.Documents) != tc.wantCount || res.Truncated {
				t.Fatalf("count = %d (%d docs, truncated %v), want %d", res.Count, len(res.Documents), res.Truncated, tc.wantCount)
			}
		})
	}

	t.Run("BytesCap", func(t *testing.T) {
		small := newService(t, dbcheck.Options{MaxBytes: 1000})
		res, err := small.Query(ctx, base)
		if err != nil {
			t.Fatal(err)
		}
		size := 0
		for _, d := range res.Documents {
			size += len(d) + 1
		}
		if !res.Truncated || res.Count == 0 || res.Count >= 100 || size > 1000 || res.Count != len(res.Documents) {
			t.Fatalf("truncated=%v count=%d size=%d, want a truncated answer under 1000 bytes", res.Truncated, res.Count, size)
		}
		if b, _ := json.Marshal(res); !strings.Contains(string(b), `"truncated":true`) {
			t.Fatalf("JSON %s does not say it was truncated", b)
		}
	})
}

// Ensure the server-side JavaScript operators are refused at any depth, naming the operator.
func TestQuery_RefusedOperators(t *testing.T) {
	t.Parallel()
	s := newService(t, dbcheck.Options{})
	cases := []struct {
		name, filter, want string
	}{
		{"WhereTop", `{"$where": "this.a > 1"}`, "$where"},
		{"WhereInAnd", `{"$and": [{"a": 1}, {"$where": "true"}]}`, "$where"},
		{"WhereInOr", `{"$or": [{"$where": "true"}]}`, "$where"},
		{"WhereDeep", `{"$or": [{"$and": [{"$nor": [{"$where": "sleep(1)"}]}]}]}`, "$where"},
		{"FunctionInExpr", `{"$expr": {"$function": {"body": "function(){return true}", "args": [], "lang": "js"}}}`, "$function"},
		{"FunctionInAndExpr", `{"$and": [{"$expr": {"$eq": [{"$function": {"body": "x", "args": [], "lang": "js"}}, true]}}]}`, "$function"},
		{"AccumulatorInExpr", `{"$expr": {"$accumulator": {}}}`, "$accumulator"},
		{"AccumulatorInOr", `{"$or": [{"a": {"$elemMatch": {"$accumulator": 1}}}]}`, "$accumulator"},
		{"CodeValue", `{"a": {"$code": "function(){}"}}`, "JavaScript"},
		{"TooDeep", strings.Repeat(`{"a":`, 40) + `1` + strings.Repeat(`}`, 40), "nested deeper than 32"},
		{"NotExtJSON", `{"a": {"$oid": "nothex"}}`, "Extended JSON"},
		{"TwoDocuments", `{} {"email": "nobody"}`, "filter must be valid MongoDB Extended JSON: invalid character '{' after top-level value"},
		{"TrailingText", `{"a": 1}, garbage !!`, "filter must be valid MongoDB Extended JSON"},
		{"String", `"str"`, "filter must be an object"},
		{"Array", `[{"a": 1}]`, "filter must be an object"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := s.Query(ctxT(t), dbcheck.QueryInput{ConnectionString: storeURI(t), Database: "x", Collection: "y", Filter: []byte(tc.filter)})
			wantKind(t, err, apperr.Invalid, tc.want)
		})
	}
}

// Ensure body validation gives class-validator messages, all at once.
func TestParse(t *testing.T) {
	t.Parallel()
	svc := newService(t, dbcheck.Options{})
	fields := func(s string) map[string]json.RawMessage {
		var m map[string]json.RawMessage
		if err := json.Unmarshal([]byte(s), &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	cases := []struct {
		name  string
		body  string
		query bool
		want  []string
	}{
		{"TestEmpty", `{}`, false, []string{"connectionString should not be empty", "database should not be empty"}},
		{"TestTypes", `{"connectionString": 1, "database": true}`, false, []string{"connectionString must be a string", "database must be a string", "connectionString should not be empty", "database should not be empty"}},
		{"TestScheme", `{"connectionString": "http://x", "database": "a.b"}`, false, []string{"connectionString must start with mongodb:// or mongodb+srv://", `database must not contain any of / \ . " $ space or NUL`}},
		{"TestOK", `{"connectionString": "mongodb://h", "database": "d"}`, false, nil},
		{"QueryMissingCollection", `{"connectionString": "mongodb://h", "database": "d"}`, true, []string{"collection should not be empty"}},
		{"QueryBadTypes", `{"connectionString": "mongodb://h", "database": "d", "collection": "c", "filter": [1], "limit": "5"}`, true, []string{"filter must be an object", "limit must be an integer number"}},
		{"QueryFraction", `{"connectionString": "mongodb://h", "database": "d", "collection": "c", "limit": 1.5}`, true, []string{"limit must be an integer number"}},
		{"QueryHuge", `{"connectionString": "mongodb://h", "database": "d", "collection": "c", "limit": 1e300}`, true, []string{"limit must not be greater than 1000"}},
		{"QuerySystem", `{"connectionString": "mongodb://h", "database": "d", "collection": "system.users"}`, true, []string{"collection must not be a system collection (system.*)"}},
		{"QueryWhere", `{"connectionString": "mongodb://h", "database": "d", "collection": "c", "filter": {"$where": "1"}}`, true, []string{"filter must not use the $where operator: server-side JavaScript is not allowed"}},
		{"QueryOK", `{"connectionString": "mongodb://h", "database": "d", "collection": "c", "filter": null, "limit": 10}`, true, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var msgs []string
			if tc.query {
				_, msgs = svc.ParseQuery(fields(tc.body))
			} else {
				_, msgs = dbcheck.ParseTest(fields(tc.body))
			}
			if !slices.Equal(msgs, tc.want) {
				t.Fatalf("messages = %q\nwant       %q", msgs, tc.want)
			}
		})
	}
}

// Ensure repeated calls against one server reuse one client: 200 tests and queries open a
// handful of connections (counted by the driver's pool monitor), not 200.
func TestClientReuse(t *testing.T) {
	t.Parallel()
	var created atomic.Int64
	mon := &event.PoolMonitor{Event: func(e *event.PoolEvent) {
		if e.Type == event.ConnectionCreated {
			created.Add(1)
		}
	}}
	s := newService(t, dbcheck.Options{PoolMonitor: mon})
	ctx := ctxT(t)
	dbName := seed(t, bson.M{"a": 1})
	for i := range 200 {
		if i%2 == 0 {
			res, err := s.Test(ctx, dbcheck.TestInput{ConnectionString: storeURI(t), Database: dbName})
			if err != nil || !res.Success {
				t.Fatalf("test %d: %+v, %v", i, res, err)
			}
		} else if _, err := s.Query(ctx, dbcheck.QueryInput{ConnectionString: storeURI(t), Database: dbName, Collection: "items"}); err != nil {
			t.Fatalf("query %d: %v", i, err)
		}
	}
	if n := created.Load(); n < 1 || n > 4 {
		t.Fatalf("connections created = %d for 200 calls, want 1..4", n)
	}
	// Concurrent callers share it too.
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			if _, err := s.Test(ctx, dbcheck.TestInput{ConnectionString: storeURI(t), Database: dbName}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if n := created.Load(); n > 4 {
		t.Fatalf("connections created = %d after concurrent calls, want at most the pool size 4", n)
	}
}

// Ensure loopback and other non-public targets are refused by default with a 403 that names the
// setting, and let through when dbcheck.allowed_hosts lists them (name, address, CIDR or glob).
func TestReachControl(t *testing.T) {
	t.Parallel()
	uri := storeURI(t)
	port := uri[strings.LastIndex(uri, ":")+1:]
	port = strings.TrimRight(port, "/")
	ctx := ctxT(t)

	cases := []struct {
		name    string
		allowed []string
		uri     string
		wantErr string
	}{
		{"LoopbackRefused", []string{}, uri, "loopback"},
		{"LocalhostRefused", []string{}, "mongodb://localhost:" + port + "/", "loopback"},
		{"OtherHostListed", []string{"db.example.com", "10.0.0.0/8"}, uri, "dbcheck.allowed_hosts"},
		{"PrivateRefused", []string{}, "mongodb://10.1.2.3:27017/", "private"},
		{"MetadataRefused", []string{}, "mongodb://169.254.169.254:27017/", "link-local"},
		{"UnspecifiedRefused", []string{}, "mongodb://0.0.0.0:27017/", "unspecified"},
		{"MappedRefused", []string{}, "mongodb://[::ffff:127.0.0.1]:" + port + "/", "loopback"},
		{"IPv6LoopbackRefused", []string{}, "mongodb://[::1]:" + port + "/", "loopback"},
		{"UnixSocketRefused", []string{}, "mongodb://%2Ftmp%2Fmongodb-27017.sock/", "unix socket"},
		{"AllowedByAddress", []string{"127.0.0.1"}, uri, ""},
		{"AllowedByCIDR", []string{"127.0.0.0/8"}, uri, ""},
		{"AllowedByName", []string{"localhost"}, "mongodb://localhost:" + port + "/", ""},
		{"AllowedByGlob", []string{"local*"}, "mongodb://localhost:" + port + "/", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newService(t, dbcheck.Options{AllowedHosts: tc.allowed, Timeout: 2 * time.Second})
			res, err := s.Test(ctx, dbcheck.TestInput{ConnectionString: tc.uri, Database: "admin"})
			if tc.wantErr != "" {
				wantKind(t, err, apperr.Forbidden, tc.wantErr)
				if !strings.Contains(err.Error(), "dbcheck.allowed_hosts") {
					t.Fatalf("error %q does not name the setting", err)
				}
				_, qerr := s.Query(ctx, dbcheck.QueryInput{ConnectionString: tc.uri, Database: "admin", Collection: "c"})
				wantKind(t, qerr, apperr.Forbidden, tc.wantErr)
				return
			}
			if err != nil || !res.Success {
				t.Fatalf("Test = %+v, %v; want success", res, err)
			}
		})
	}

	t.Run("CLIUnrestricted", func(t *testing.T) {
		s, err := dbcheck.New(dbcheck.Options{Unrestricted: true})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close(context.Background())
		res, err := s.Test(ctx, dbcheck.TestInput{ConnectionString: uri, Database: "admin"})
		if err != nil || !res.Success {
			t.Fatalf("unrestricted Test = %+v, %v; want success", res, err)
		}
	})

	t.Run("BadAllowedHosts", func(t *testing.T) {
		if _, err := dbcheck.New(dbcheck.Options{AllowedHosts: []string{"10.0.0.0/99"}}); err == nil || !strings.Contains(err.Error(), "dbcheck.allowed_hosts") {
			t.Fatalf("New with a bad CIDR: err = %v, want one naming dbcheck.allowed_hosts", err)
		}
	})
}

// Ensure connection-string options that make this server use its own credentials or files are
// refused with 400, and allowed for the operator's CLI.
func TestRefusedOptions(t *testing.T) {
	t.Parallel()
	s := newService(t, dbcheck.Options{})
	cases := []struct {
		name, query, want string
	}{
		{"AWS", "authMechanism=MONGODB-AWS", "MONGODB-AWS"},
		{"AWSLowerCase", "authmechanism=mongodb-aws", "mongodb-aws"},
		{"OIDC", "authMechanism=MONGODB-OIDC&authMechanismProperties=ENVIRONMENT:azure,TOKEN_RESOURCE:x", "MONGODB-OIDC"},
		{"GSSAPI", "authMechanism=GSSAPI", "GSSAPI"},
		{"X509", "authMechanism=MONGODB-X509&tls=true", "MONGODB-X509"},
		{"CAFile", "tls=true&tlsCAFile=/etc/ssl/certs/ca-certificates.crt", "tlsCAFile"},
		{"CertAndKey", "tls=true&tlsCertificateFile=/c.pem&tlsPrivateKeyFile=/k.pem", "tlsCertificateFile, tlsPrivateKeyFile"},
		{"CertWithoutKey", "tls=true&tlsCertificateFile=/c.pem", "tlsCertificateFile"},
		{"KeyFile", "tls=true&tlsCertificateKeyFile=/etc/app/key.pem", "tlsCertificateKeyFile"},
		{"KeyFilePassword", "tls=true&tlsCertificateKeyFilePassword=x", "tlsCertificateKeyFilePassword"},
		{"SSLAlias", "ssl=true&sslClientCertificateKeyFile=/k.pem", "sslClientCertificateKeyFile"},
		{"MixedCase", "TLSCAFILE=/x", "tlsCAFile"},
		{"Unparsable", "w=banana&wtimeoutMS=notanumber", "not a valid MongoDB connection string"},
		{"Compressors", "compressors=zlib", "compressors is not allowed"},
		// A "?" in the password must not hide the real query from the check.
		{"PasswordWithQuestionMark", "mongodb://u:p?x@db.example.com/?tlsCAFile=/etc/passwd&tls=true", "tlsCAFile"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			uri := "mongodb://u:p@db.example.com:27017/?" + tc.query
			if tc.name == "PasswordWithQuestionMark" {
				uri = tc.query
			}
			_, err := s.Test(ctxT(t), dbcheck.TestInput{ConnectionString: uri, Database: "admin"})
			wantKind(t, err, apperr.Invalid, tc.want)
			_, err = s.Query(ctxT(t), dbcheck.QueryInput{ConnectionString: uri, Database: "admin", Collection: "c"})
			wantKind(t, err, apperr.Invalid, tc.want)
		})
	}
}

// Ensure the secret fields of Options.Secret never leave in a document, and that no filter can
// name them or test them without naming them, while the operator's CLI (no Secret) reads them.
func TestQuery_SecretFields(t *testing.T) {
	t.Parallel()
	db := storetest.DB(t)
	hash := "$2a$10$abcdefghijklmnopqrstuuABCDEFGHIJKLMNOPQRSTUVWXYZ01234"
	if _, err := db.Collection("users").InsertOne(ctxT(t), bson.D{{Key: "_id", Value: "u1"}, {Key: "email", Value: "ada@example.com"},
		{Key: "password", Value: hash}, {Key: "name", Value: "Ada"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Collection("other").InsertOne(ctxT(t), bson.D{{Key: "_id", Value: "o1"}, {Key: "password", Value: "plain"}}); err != nil {
		t.Fatal(err)
	}
	api := newService(t, dbcheck.Options{Secret: []dbcheck.SecretField{{Database: strings.ToUpper(db.Name()), Collection: "users", Field: "password"}}})
	cli := newService(t, dbcheck.Options{})
	query := func(s *dbcheck.Service, coll, filter string) (*dbcheck.QueryResult, error) {
		return s.Query(ctxT(t), dbcheck.QueryInput{ConnectionString: storeURI(t), Database: db.Name(), Collection: coll, Filter: []byte(filter)})
	}

	res, err := query(api, "users", `{"email": "ada@example.com"}`)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(res.Documents[0]); got != `{"_id":"u1","email":"ada@example.com","name":"Ada"}` {
		t.Fatalf("API document = %s, want it without password", got)
	}
	res, err = query(cli, "users", `{"password": {"$regex": "^\\$2a"}}`)
	if err != nil || res.Count != 1 || !strings.Contains(string(res.Documents[0]), hash) {
		t.Fatalf("CLI query = %+v, %v: want the document with its password", res, err)
	}
	// Another collection of the database keeps a field of the same name.
	if res, err = query(api, "other", `{"password": "plain"}`); err != nil || res.Count != 1 || !strings.Contains(string(res.Documents[0]), "plain") {
		t.Fatalf("other collection = %+v, %v", res, err)
	}

	refused := []struct{ name, filter, want string }{
		{"Named", `{"password": {"$regex": "^\\$2a\\$10\\$a"}}`, "must not name password"},
		{"Path", `{"password.x": 1}`, "must not name password.x"},
		{"Escaped", `{"pass\u0077ord": {"$exists": true}}`, "must not name password"},
		{"InOr", `{"$or": [{"email": "x"}, {"$and": [{"password": {"$gt": "$2a"}}]}]}`, "must not name password"},
		{"InElemMatch", `{"a": {"$elemMatch": {"password": 1}}}`, "must not name password"},
		{"Expr", `{"$expr": {"$eq": [{"$substr": ["$password", 0, 1]}, "$"]}}`, "must not use $expr"},
		{"JSONSchema", `{"$jsonSchema": {"properties": {"password": {"pattern": "^\\$2a"}}}}`, "must not use $jsonSchema"},
	}
	for _, tc := range refused {
		t.Run(tc.name, func(t *testing.T) {
			_, err := query(api, "users", tc.filter)
			wantKind(t, err, apperr.Forbidden, tc.want)
		})
	}
}

// Ensure a mongodb+srv:// string whose DNS records cannot be looked up is a server that cannot
// be reached (a failed test, a query's Upstream error), not an invalid string, and that the
// password appears in neither answer.
func TestSRVLookupFailure(t *testing.T) {
	t.Parallel()
	s := newService(t, dbcheck.Options{})
	const uri = "mongodb+srv://admin:s3cretpw@nonexistent.invalid/"
	res, err := s.Test(ctxT(t), dbcheck.TestInput{ConnectionString: uri, Database: "admin"})
	if err != nil || res.Success || !strings.Contains(res.Error, "DNS lookup of _mongodb._tcp.nonexistent.invalid failed: no such host") {
		t.Fatalf("Test = %+v, %v; want a failed test naming the lookup", res, err)
	}
	_, err = s.Query(ctxT(t), dbcheck.QueryInput{ConnectionString: uri, Database: "admin", Collection: "c"})
	wantKind(t, err, apperr.Upstream, "DNS lookup of _mongodb._tcp.nonexistent.invalid failed")
	if strings.Contains(res.Error+err.Error(), "s3cretpw") {
		t.Fatal("the password reached an answer")
	}
}

// Ensure a query's answer is held within the process's bound on buffered bytes: its documents
// and the answer encoded from them are taken from the bound until Release (after the answer is
// written), a query whose answer does not fit beside the others' is refused at once (503,
// overloaded, Retry-After) and gives back what it took, and Release gives back every byte.
func TestQuery_WithinTheBufferedBound(t *testing.T) {
	t.Parallel()
	docs := make([]any, 20)
	for i := range docs {
		docs[i] = bson.M{"n": i, "pad": strings.Repeat("x", 1000)}
	}
	dbName := seed(t, docs...)
	ctx := ctxT(t)
	mem := memlimit.New(100 << 10)
	s := newService(t, dbcheck.Options{Memory: mem})
	in := dbcheck.QueryInput{ConnectionString: storeURI(t), Database: dbName, Collection: "items"}

	first, err := s.Query(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	held := mem.Used()
	size := 0
	for _, d := range first.Documents {
		size += len(d) + 1
	}
	if first.Count != 20 || held < int64(2*size) {
		t.Fatalf("count=%d, %d bytes held, want 20 documents and at least %d (the documents and their answer)", first.Count, held, 2*size)
	}
	second, err := s.Query(ctx, in)
	if err != nil {
		t.Fatalf("a second answer fits beside the first: %v", err)
	}
	_, err = s.Query(ctx, in)
	wantKind(t, err, apperr.Unavailable, "server.max_buffered_bytes")
	if e := apperr.As(err); e.Code != memlimit.Overloaded || e.RetryAfter != 1 {
		t.Fatalf("refusal code=%q retryAfter=%d, want %q and 1", e.Code, e.RetryAfter, memlimit.Overloaded)
	}
	if got := mem.Used(); got != 2*held {
		t.Fatalf("%d bytes held after a refused query, want %d: it kept what it took", got, 2*held)
	}
	first.Release()
	second.Release()
	second.Release() // twice is harmless
	if got := mem.Used(); got != 0 {
		t.Fatalf("%d bytes held after Release, want 0", got)
	}
}
