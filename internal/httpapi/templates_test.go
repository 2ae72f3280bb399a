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
	"go.mongodb.org/mongo-driver/mongo"

	"github.com/acme/app/internal/auth"
	"github.com/acme/app/internal/httpapi"
	"github.com/acme/app/internal/store"
	"github.com/acme/app/internal/store/storetest"
	"github.com/acme/app/internal/templates"
)

type tplEnv struct {
	srv         *httptest.Server
	client      *mongo.Client
	app, core   string
	user, admin string // tokens
}

func newTplEnv(t *testing.T, core *mongo.Client) *tplEnv {
	t.Helper()
	return newTplEnvWith(t, core, nil, nil)
}

// newTplEnvWith is newTplEnv with the service's options and the HTTP server changed by
// svcMod and srvMod (when not nil).
func newTplEnvWith(t *testing.T, core *mongo.Client, svcMod func(*templates.Options), srvMod func(*http.Server)) *tplEnv {
	t.Helper()
	st := storetest.Store(t)
	e := &tplEnv{client: st.Client(), app: storetest.DBName(t), core: storetest.DBName(t)}
	opts := templates.Options{Spaces: st.Client(), AppDatabase: e.app, Core: core, CoreDatabase: e.core,
		CoreTimeout: 300 * time.Millisecond}
	if svcMod != nil {
		svcMod(&opts)
	}
	svc := templates.New(opts)
	tokens := auth.NewTokens([]byte("test-secret-test-secret-test-secret"), time.Hour)
	var err error
	if e.user, err = tokens.Issue(auth.Caller{ID: primitive.NewObjectID().Hex(), Email: "u@example.com", Roles: []string{"user"}}); err != nil {
		t.Fatal(err)
	}
	if e.admin, err = tokens.Issue(auth.Caller{ID: primitive.NewObjectID().Hex(), Email: "a@example.com", Roles: []string{"user", "admin"}}); err != nil {
		t.Fatal(err)
	}
	e.srv = httptest.NewUnstartedServer(httpapi.NewServer(httpapi.Options{}, httpapi.Deps{Tokens: tokens, Templates: svc}))
	if srvMod != nil {
		srvMod(e.srv.Config)
	}
	e.srv.Start()
	t.Cleanup(e.srv.Close)
	return e
}

// seedSpace inserts a space whose database is a fresh test database, with templates ids.
func (e *tplEnv) seedSpace(t *testing.T, ids ...string) (string, string) {
	t.Helper()
	ctx := context.Background()
	oid, db := primitive.NewObjectID(), storetest.DBName(t)
	if _, err := e.client.Database(e.app).Collection("spaces").InsertOne(ctx, bson.D{{Key: "_id", Value: oid}, {Key: "database", Value: db}}); err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		if _, err := e.client.Database(db).Collection("property_templates").InsertOne(ctx, bson.D{{Key: "id", Value: id},
			{Key: "name", Value: "T " + id}, {Key: "widgetType", Value: "text"}, {Key: "properties", Value: bson.A{}}}); err != nil {
			t.Fatal(err)
		}
	}
	return oid.Hex(), db
}

func (e *tplEnv) count(t *testing.T, db, coll string) int {
	t.Helper()
	n, err := e.client.Database(db).Collection(coll).CountDocuments(context.Background(), bson.D{})
	if err != nil {
		t.Fatal(err)
	}
	return int(n)
}

type answer struct {
	status int
	header http.Header
	body   []byte
}

func (a answer) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(a.body, &m); err != nil {
		t.Fatalf("body %s: %v", a.body, err)
	}
	return m
}

func (e *tplEnv) do(t *testing.T, method, path, token, body string) answer {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = bytes.NewBufferString(body)
	}
	req, err := http.NewRequest(method, e.srv.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return answer{resp.StatusCode, resp.Header, b}
}

// Ensure each template route answers the expected status, body and source header.
func TestTemplates_Routes(t *testing.T) {
	t.Parallel()
	e := newTplEnv(t, nil)
	space, _ := e.seedSpace(t)
	base := "/api/spaces/" + space + "/properties/templates"
	tpl := `{"id":"colour","name":"Colour picker","widgetType":"color","properties":[{"key":"default","value":"#f00"}]}`
	steps := []struct {
		name, method, path, token, body string
		wantStatus                      int
		wantBody                        string // substring
		wantSource                      string
	}{
		{"ErrNoToken", "GET", base, "", "", 401, `"message":"Unauthorized"`, ""},
		{"ErrValidation", "POST", base, e.user, `{"widgetType":3,"properties":"x"}`, 400,
			`"message":["name should not be empty","name must be a string","widgetType must be a string","properties must be an array"]`, ""},
		{"ErrMalformed", "POST", base, e.user, `{"name":`, 400, `"error":"Bad Request"`, ""},
		{"Create", "POST", base, e.user, tpl, 201, `"id":"colour"`, "core"},
		{"ErrDuplicate", "POST", base, e.user, tpl, 409, `"message":"template with id \"colour\" already exists"`, ""},
		{"List", "GET", base, e.user, "", 200, `"properties":[{"key":"default","value":"#f00"}]`, "core"},
		{"ListFilteredOut", "GET", base + "?widgetType=slider", e.user, "", 200, `[]`, "core"},
		{"Get", "GET", base + "/colour", e.user, "", 200, `"name":"Colour picker"`, "core"},
		{"ForWidget", "GET", base + "/widget/color", e.user, "", 200, `"id":"colour"`, "core"},
		{"ErrForWidgetNone", "GET", base + "/widget/slider", e.user, "", 404, `"error":"Not Found"`, ""},
		{"Update", "PUT", base + "/colour", e.user, `{"name":"v2","widgetType":"color","properties":[]}`, 200, `"name":"v2"`, "core"},
		{"ErrUpdateMissing", "PUT", base + "/nope", e.user, `{"name":"v2","widgetType":"color","properties":[]}`, 404, `"statusCode":404`, ""},
		{"Delete", "DELETE", base + "/colour", e.user, "", 200, `"id":"colour"`, "core"},
		{"ErrGetDeleted", "GET", base + "/colour", e.user, "", 404, `"message":"template \"colour\" not found"`, ""},
	}
	for _, s := range steps {
		got := e.do(t, s.method, s.path, s.token, s.body)
		if got.status != s.wantStatus || !bytes.Contains(got.body, []byte(s.wantBody)) {
			t.Fatalf("%s: %d %s, want %d with %s", s.name, got.status, got.body, s.wantStatus, s.wantBody)
		}
		if src := got.header.Get("X-Templates-Source"); src != s.wantSource {
			t.Fatalf("%s: X-Templates-Source=%q, want %q", s.name, src, s.wantSource)
		}
	}
}

// Ensure migrate and cleanup need the admin role, default to the documented dry-run modes and
// validate dryRun; cleanup keeps, and lists in keptDifferent, a space's version core does not
// hold (here "c", created in core through the API with another content).
func TestTemplates_MigrateAndCleanup(t *testing.T) {
	t.Parallel()
	e := newTplEnv(t, nil)
	space, db := e.seedSpace(t, "a", "b", "c")
	if got := e.do(t, "POST", "/api/spaces/"+space+"/properties/templates", e.user, `{"id":"c","name":"core's c","widgetType":"text","properties":[]}`); got.status != 201 {
		t.Fatalf("create c: %d %s", got.status, got.body)
	}
	migrate := "/api/spaces/anything/properties/migrate-templates-to-core"
	cleanup := "/api/spaces/" + space + "/properties/cleanup-space-templates"

	for _, r := range []struct{ method, path string }{{"POST", migrate + "?dryRun=false"}, {"DELETE", cleanup}} {
		got := e.do(t, r.method, r.path, e.user, "")
		if got.status != 403 || !bytes.Contains(got.body, []byte(`"error":"Forbidden"`)) {
			t.Fatalf("%s %s as a user: %d %s, want 403", r.method, r.path, got.status, got.body)
		}
	}
	if n := e.count(t, e.core, "core_property_templates"); n != 1 {
		t.Fatalf("a refused migration wrote %d documents", n-1)
	}
	if got := e.do(t, "POST", migrate+"?dryRun=maybe", e.admin, ""); got.status != 400 ||
		!bytes.Contains(got.body, []byte(`"message":["dryRun must be a boolean value"]`)) {
		t.Fatalf("dryRun=maybe: %d %s", got.status, got.body)
	}

	got := e.do(t, "POST", migrate, e.admin, "")
	if got.status != 200 || got.json(t)["dryRun"] != true || got.json(t)["migrated"] != 2.0 {
		t.Fatalf("migrate without dryRun: %d %s, want a dry run reporting 2", got.status, got.body)
	}
	if n := e.count(t, e.core, "core_property_templates"); n != 1 {
		t.Fatalf("the default (dry) migration wrote %d documents", n-1)
	}
	got = e.do(t, "POST", migrate+"?dryRun=false", e.admin, "")
	body := got.json(t)
	for _, k := range []string{"dryRun", "spacesScanned", "templatesFound", "uniqueTemplates", "migrated", "alreadyInCore", "conflicts", "errors", "durationMs"} {
		if _, ok := body[k]; !ok {
			t.Fatalf("report lacks %q: %s", k, got.body)
		}
	}
	if got.status != 200 || body["migrated"] != 2.0 || e.count(t, e.core, "core_property_templates") != 3 {
		t.Fatalf("migrate dryRun=false: %d %s", got.status, got.body)
	}

	for _, dry := range []string{"?dryRun=true", ""} {
		got = e.do(t, "DELETE", cleanup+dry, e.admin, "")
		want := `"deleted":2,"keptNotInCore":[],"keptDifferent":["c"]}`
		if got.status != 200 || !bytes.Contains(got.body, []byte(want)) {
			t.Fatalf("cleanup%s: %d %s, want 200 with %s", dry, got.status, got.body, want)
		}
	}
	if n := e.count(t, db, "property_templates"); n != 1 {
		t.Fatalf("the space holds %d templates after the cleanup, want 1 (c)", n)
	}
	if got := e.do(t, "DELETE", "/api/spaces/"+primitive.NewObjectID().Hex()+"/properties/cleanup-space-templates", e.admin, ""); got.status != 404 {
		t.Fatalf("cleanup of an unknown space: %d %s", got.status, got.body)
	}
}

// Ensure reads fall back to the space (header "space") and writes answer 503 when core is down.
func TestTemplates_CoreDown(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	dead, err := store.Connect(context.Background(), "mongodb://"+addr+"/?directConnection=true")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = dead.Disconnect(context.Background()) })
	e := newTplEnv(t, dead)
	space, _ := e.seedSpace(t, "legacy")
	base := "/api/spaces/" + space + "/properties/templates"

	got := e.do(t, "GET", base, e.user, "")
	if got.status != 200 || got.header.Get("X-Templates-Source") != "space" || !bytes.Contains(got.body, []byte(`"id":"legacy"`)) {
		t.Fatalf("list with core down: %d %q %s", got.status, got.header.Get("X-Templates-Source"), got.body)
	}
	got = e.do(t, "POST", base, e.user, `{"name":"n","widgetType":"w","properties":[]}`)
	if got.status != 503 || !bytes.Contains(got.body, []byte(`"error":"Service Unavailable"`)) {
		t.Fatalf("create with core down: %d %s, want 503", got.status, got.body)
	}
}

// Ensure a property the database would read as an operator or a path, holding a value of a
// type JSON does not have, or an array inside an array (which the embedded store cannot hold),
// is a 400 naming it on create and on update, and nothing is stored (these were a 500 or a 503
// "core unavailable" answer from the store's refusal).
func TestTemplates_UnstorablePropertiesRefused(t *testing.T) {
	t.Parallel()
	e := newTplEnv(t, nil)
	space, _ := e.seedSpace(t)
	base := "/api/spaces/" + space + "/properties/templates"
	if got := e.do(t, "POST", base, e.user, `{"id":"t","name":"n","widgetType":"w","properties":[{"k":1}]}`); got.status != 201 {
		t.Fatalf("create: %d %s", got.status, got.body)
	}
	tests := []struct{ property, message string }{
		{`{"$where":"1"}`, `properties.0 must not hold the key \"$where\": keys must not start with $ or contain a dot`},
		{`{"a.b":1}`, `properties.0 must not hold the key \"a.b\": keys must not start with $ or contain a dot`},
		{`{"f":{"$code":"function(){}"}}`, `properties.0.f must hold only strings, numbers, booleans, null, objects and arrays`},
		{`{"x":{"$minKey":1}}`, `properties.0.x must hold only strings, numbers, booleans, null, objects and arrays`},
		{`{"v":[[1]]}`, `properties.0.v.0 must not be an array: an array cannot hold arrays`},
	}
	for _, tt := range tests {
		for _, w := range []struct{ method, path, id string }{{"POST", base, `"id":"u",`}, {"PUT", base + "/t", ""}} {
			got := e.do(t, w.method, w.path, e.user, `{`+w.id+`"name":"changed","widgetType":"w","properties":[`+tt.property+`]}`)
			if got.status != 400 || !bytes.Contains(got.body, []byte(tt.message)) {
				t.Errorf("%s %s: %d %s, want 400 %s", w.method, tt.property, got.status, got.body, tt.message)
			}
		}
	}
	got := e.do(t, "GET", base+"/t", e.user, "")
	if n := e.count(t, e.core, "core_property_templates"); n != 1 || !bytes.Contains(got.body, []byte(`"name":"n","widgetType":"w","properties":[{"k":1}]`)) {
		t.Fatalf("core holds %d templates; t is %s", n, got.body)
	}
}

// Ensure a template stored with a timestamp outside the years 0 to 9999 (a date in year 10000,
// epoch microseconds read as milliseconds) is answered, without that timestamp, by every read
// and by delete, instead of a 500 for everyone.
func TestTemplates_OutOfRangeTimestamps(t *testing.T) {
	t.Parallel()
	e := newTplEnv(t, nil)
	space, _ := e.seedSpace(t)
	ctx := context.Background()
	if _, err := e.client.Database(e.core).Collection("core_property_templates").InsertMany(ctx, []any{
		bson.D{{Key: "_id", Value: "far"}, {Key: "name", Value: "Far"}, {Key: "widgetType", Value: "far"}, {Key: "properties", Value: bson.A{}},
			{Key: "updatedAt", Value: primitive.NewDateTimeFromTime(time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC))}},
		bson.D{{Key: "_id", Value: "micro"}, {Key: "name", Value: "Micro"}, {Key: "widgetType", Value: "micro"}, {Key: "properties", Value: bson.A{}},
			{Key: "createdAt", Value: int64(1736500000000000)}},
	}); err != nil {
		t.Fatal(err)
	}
	base := "/api/spaces/" + space + "/properties/templates"
	steps := []struct {
		name, method, path string
		wantStatus         int
		wantBody           string
	}{
		{"List", "GET", base, 200, `[{"id":"far","name":"Far","widgetType":"far","properties":[]},{"id":"micro","name":"Micro","widgetType":"micro","properties":[]}]`},
		{"Get", "GET", base + "/far", 200, `{"id":"far","name":"Far","widgetType":"far","properties":[]}`},
		{"Widget", "GET", base + "/widget/micro", 200, `{"id":"micro","name":"Micro","widgetType":"micro","properties":[]}`},
		{"Delete", "DELETE", base + "/far", 200, `{"id":"far","name":"Far","widgetType":"far","properties":[]}`},
		{"ErrDeleted", "GET", base + "/far", 404, `{"statusCode":404,"message":"template \"far\" not found","error":"Not Found"}`},
	}
	for _, s := range steps {
		got := e.do(t, s.method, s.path, e.user, "")
		if got.status != s.wantStatus || string(bytes.TrimSpace(got.body)) != s.wantBody {
			t.Fatalf("%s: %d %s, want %d %s", s.name, got.status, got.body, s.wantStatus, s.wantBody)
		}
	}
}

// Ensure migration over HTTP refuses, in a dry run and a real run, a template the API would
// refuse, naming its space, identifier and reason in errors, and copies the rest.
func TestTemplates_MigrateRefusesInvalidTemplates(t *testing.T) {
	t.Parallel()
	e := newTplEnv(t, nil)
	space, db := e.seedSpace(t, "fine")
	if _, err := e.client.Database(db).Collection("property_templates").InsertOne(context.Background(), bson.D{{Key: "id", Value: "long"},
		{Key: "name", Value: strings.Repeat("n", 10_000)}, {Key: "widgetType", Value: "text"}, {Key: "properties", Value: bson.A{}}}); err != nil {
		t.Fatal(err)
	}
	want := `"errors":[{"spaceId":"` + space + `","templateId":"long","message":"name must be shorter than or equal to 256 characters"}]`
	for _, dry := range []string{"true", "false"} {
		got := e.do(t, "POST", "/api/spaces/"+space+"/properties/migrate-templates-to-core?dryRun="+dry, e.admin, "")
		if got.status != 200 || !bytes.Contains(got.body, []byte(want)) || !bytes.Contains(got.body, []byte(`"uniqueTemplates":1,"migrated":1`)) {
			t.Fatalf("migrate dryRun=%s: %d %s, want 200 with %s", dry, got.status, got.body, want)
		}
	}
	if n := e.count(t, e.core, "core_property_templates"); n != 1 {
		t.Fatalf("core holds %d templates, want 1 (fine)", n)
	}
}

// slowLog is a log handler that takes d to write each line: the migration and the cleanup log
// one line when they are done, so with it they take at least d.
type slowLog struct{ d time.Duration }

func (h slowLog) Enabled(context.Context, slog.Level) bool  { return true }
func (h slowLog) Handle(context.Context, slog.Record) error { time.Sleep(h.d); return nil }
func (h slowLog) WithAttrs([]slog.Attr) slog.Handler        { return h }
func (h slowLog) WithGroup(string) slog.Handler             { return h }

// Ensure a migration or a cleanup that runs past the server's write timeout still gets its
// answer to the client (it was an empty reply though the work was done).
func TestTemplates_AdminRoutesOutliveWriteTimeout(t *testing.T) {
	t.Parallel()
	e := newTplEnvWith(t, nil, func(o *templates.Options) { o.Logger = slog.New(slowLog{d: 400 * time.Millisecond}) },
		func(s *http.Server) { s.WriteTimeout = 100 * time.Millisecond })
	space, db := e.seedSpace(t, "a", "b")
	steps := []struct{ name, method, path, want string }{
		{"Migrate", "POST", "/api/spaces/" + space + "/properties/migrate-templates-to-core?dryRun=false", `"migrated":2`},
		{"Cleanup", "DELETE", "/api/spaces/" + space + "/properties/cleanup-space-templates", `"deleted":2`},
	}
	for _, s := range steps {
		req, err := http.NewRequest(s.method, e.srv.URL+s.path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+e.admin)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s: %v (the answer was cut at the write timeout)", s.name, err)
		}
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != 200 || !bytes.Contains(body, []byte(s.want)) {
			t.Fatalf("%s: %d %s, want 200 with %s", s.name, resp.StatusCode, body, s.want)
		}
	}
	if n := e.count(t, e.core, "core_property_templates"); n != 2 || e.count(t, db, "property_templates") != 0 {
		t.Fatalf("core holds %d templates, want 2; the space %d, want 0", n, e.count(t, db, "property_templates"))
	}
}

// Ensure an unknown query parameter on migrate or cleanup (a misspelt dryRun, say) and a dryRun
// that cannot be read as exactly one boolean (written twice, empty as in a bare "?dryRun",
// holding ";" or a malformed escape, which net/http's own parser drops without a word) are a
// 400 naming them, and that nothing is written or deleted: read as absent, such a dryRun made a
// cleanup run for real.
func TestTemplates_AdminRoutesRefuseUnreadableQuery(t *testing.T) {
	t.Parallel()
	e := newTplEnv(t, nil)
	space, db := e.seedSpace(t, "a")
	migrate := "/api/spaces/" + space + "/properties/migrate-templates-to-core"
	cleanup := "/api/spaces/" + space + "/properties/cleanup-space-templates"
	if got := e.do(t, "POST", migrate+"?dryRun=false", e.admin, ""); got.status != 200 {
		t.Fatalf("migrate: %d %s", got.status, got.body)
	}
	if _, err := e.client.Database(db).Collection("property_templates").InsertOne(context.Background(),
		bson.D{{Key: "id", Value: "b"}, {Key: "name", Value: "T b"}, {Key: "widgetType", Value: "text"}, {Key: "properties", Value: bson.A{}}}); err != nil {
		t.Fatal(err)
	}
	const notBoolean = `["dryRun must be a boolean value"]`
	tests := []struct {
		name, method, path, wantMessage string
	}{
		{"CleanupLowercase", "DELETE", cleanup + "?dryrun=true", `["property dryrun should not exist"]`},
		{"CleanupTwo", "DELETE", cleanup + "?dryRun=true&force=1&dry_run=1", `["property dry_run should not exist","property force should not exist"]`},
		{"MigrateSnakeCase", "POST", migrate + "?dry_run=false", `["property dry_run should not exist"]`},
		{"CleanupSemicolon", "DELETE", cleanup + "?dryRun=true;", notBoolean},
		{"CleanupBadEscape", "DELETE", cleanup + "?dryRun=tru%e", notBoolean},
		{"CleanupTwice", "DELETE", cleanup + "?dryRun=false&dryRun=true", notBoolean},
		{"CleanupTwiceSame", "DELETE", cleanup + "?dryRun=true&dryRun=true", notBoolean},
		{"CleanupEmpty", "DELETE", cleanup + "?dryRun=", notBoolean},
		{"CleanupBare", "DELETE", cleanup + "?dryRun", notBoolean},
		{"MigrateEmpty", "POST", migrate + "?dryRun=", notBoolean},
		{"CleanupBadEscapeInName", "DELETE", cleanup + "?dry%zzRun=true", `["property dry%zzRun should not exist"]`},
		{"CleanupSemicolonInName", "DELETE", cleanup + "?dryRun;x=true", `["property dryRun;x should not exist"]`},
		{"MigrateSemicolon", "POST", migrate + "?dryRun=false;", notBoolean},
		{"MigrateTwice", "POST", migrate + "?dryRun=true&dryRun=false", notBoolean},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := e.do(t, tt.method, tt.path, e.admin, "")
			want := `{"statusCode":400,"message":` + tt.wantMessage + `,"error":"Bad Request"}`
			if got.status != 400 || string(bytes.TrimSpace(got.body)) != want {
				t.Fatalf("%d %s, want 400 %s", got.status, got.body, want)
			}
		})
	}
	if n := e.count(t, db, "property_templates"); n != 2 {
		t.Fatalf("the space holds %d templates, want 2: a refused cleanup deleted", n)
	}
	if n := e.count(t, e.core, "core_property_templates"); n != 1 {
		t.Fatalf("core holds %d templates, want 1: a refused migration wrote", n)
	}
}

// Ensure the list's widgetType filter is read as written, also when it holds ";" (which
// net/http's own parser drops, answering every template instead of the matching ones).
func TestTemplates_ListFilterHoldingSemicolon(t *testing.T) {
	t.Parallel()
	e := newTplEnv(t, nil)
	list := "/api/spaces/any/properties/templates"
	for _, body := range []string{
		`{"id":"a","name":"A","widgetType":"a;b","properties":[]}`,
		`{"id":"b","name":"B","widgetType":"text","properties":[]}`,
	} {
		if got := e.do(t, "POST", list, e.user, body); got.status != 201 {
			t.Fatalf("create: %d %s", got.status, got.body)
		}
	}
	got := e.do(t, "GET", list+"?widgetType=a;b", e.user, "")
	var ts []templates.Template
	if err := json.Unmarshal(got.body, &ts); err != nil || got.status != 200 {
		t.Fatalf("%d %s (%v)", got.status, got.body, err)
	}
	if len(ts) != 1 || ts[0].ID != "a" {
		t.Fatalf("widgetType=a;b answered %s, want only template a", got.body)
	}
}

// Ensure the answers write createdAt and updatedAt as JavaScript's toISOString does, with three
// fractional digits ("…48.510Z", not "…48.51Z"), which clients of the replaced service parse.
func TestTemplates_TimestampsAsToISOString(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 28, 2, 30, 48, 510_000_000, time.UTC)
	e := newTplEnvWith(t, nil, func(o *templates.Options) { o.Now = func() time.Time { return now } }, nil)
	space, _ := e.seedSpace(t)
	base := "/api/spaces/" + space + "/properties/templates"
	want := `"createdAt":"2026-11-28T02:30:48.510Z","updatedAt":"2026-11-28T02:30:48.510Z"}`
	for _, s := range []struct{ method, path, body string }{
		{"POST", base, `{"id":"a","name":"A","widgetType":"w","properties":[]}`},
		{"GET", base + "/a", ""},
		{"GET", base, ""},
	} {
		got := e.do(t, s.method, s.path, e.user, s.body)
		if got.status/100 != 2 || !bytes.Contains(got.body, []byte(want)) {
			t.Fatalf("%s %s: %d %s, want %s", s.method, s.path, got.status, got.body, want)
		}
	}
}
