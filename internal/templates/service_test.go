package templates_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/bson/primitive"
	"go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"

	"github.com/acme/app/internal/apperr"
	"github.com/acme/app/internal/store"
	"github.com/acme/app/internal/store/storetest"
	"github.com/acme/app/internal/templates"
)

// env is a service on a fresh application database and a fresh core database.
type env struct {
	svc       *templates.Service
	client    *mongo.Client
	app, core string
}

func newEnv(t *testing.T, mod ...func(*templates.Options)) *env {
	t.Helper()
	st := storetest.Store(t)
	e := &env{client: st.Client(), app: storetest.DBName(t), core: storetest.DBName(t)}
	opts := templates.Options{Spaces: st.Client(), AppDatabase: e.app, CoreDatabase: e.core, BatchSize: 7}
	for _, m := range mod {
		m(&opts)
	}
	e.svc = templates.New(opts)
	return e
}

// seedSpace inserts a space and its templates. database "" uses space_<id> (dropped after the test).
func (e *env) seedSpace(t *testing.T, database string, docs ...bson.D) (string, string) {
	t.Helper()
	ctx := context.Background()
	oid := primitive.NewObjectID()
	sp := bson.D{{Key: "_id", Value: oid}, {Key: "name", Value: "space " + oid.Hex()}}
	if database != "" {
		sp = append(sp, bson.E{Key: "database", Value: database})
	} else {
		database = "space_" + oid.Hex()
		t.Cleanup(func() { _ = e.client.Database(database).Drop(context.Background()) })
	}
	if _, err := e.client.Database(e.app).Collection("spaces").InsertOne(ctx, sp); err != nil {
		t.Fatal(err)
	}
	if len(docs) > 0 {
		many := make([]any, len(docs))
		for i, d := range docs {
			many[i] = d
		}
		if _, err := e.client.Database(database).Collection("property_templates").InsertMany(ctx, many); err != nil {
			t.Fatal(err)
		}
	}
	return oid.Hex(), database
}

func tdoc(id, name string, updated time.Time) bson.D {
	return bson.D{{Key: "id", Value: id}, {Key: "name", Value: name}, {Key: "widgetType", Value: "text"},
		{Key: "properties", Value: bson.A{bson.D{{Key: "key", Value: "label"}, {Key: "type", Value: "string"}}}},
		{Key: "updatedAt", Value: updated}}
}

// docs returns the documents of db.coll keyed by their identifier (`_id` in core, `id` else `_id` in spaces).
func (e *env) docs(t *testing.T, db, coll string) map[string][]bson.M {
	t.Helper()
	cur, err := e.client.Database(db).Collection(coll).Find(context.Background(), bson.D{})
	if err != nil {
		t.Fatal(err)
	}
	var all []bson.M
	if err := cur.All(context.Background(), &all); err != nil {
		t.Fatal(err)
	}
	out := map[string][]bson.M{}
	for _, d := range all {
		key := d["_id"]
		if id, ok := d["id"]; ok && coll != "core_property_templates" {
			key = id
		}
		if oid, ok := key.(primitive.ObjectID); ok {
			key = oid.Hex()
		}
		out[key.(string)] = append(out[key.(string)], d)
	}
	return out
}

func input(t *testing.T, body string) templates.Input {
	t.Helper()
	var fields map[string]json.RawMessage
	if err := json.Unmarshal([]byte(body), &fields); err != nil {
		t.Fatal(err)
	}
	in, err := templates.DecodeInput(fields)
	if err != nil {
		t.Fatalf("DecodeInput(%s): %v", body, err)
	}
	return in
}

func kind(err error) apperr.Kind { return apperr.KindOf(err) }

func TestDecodeInput(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		body     string
		wantMsgs []string
	}{
		{"OK", `{"id":"a","name":"n","widgetType":"w","properties":[{"k":1}],"description":"d"}`, nil},
		{"OKWithoutID", `{"name":"n","widgetType":"w","properties":[]}`, nil},
		{"ErrEmptyBody", `{}`, []string{"name should not be empty", "name must be a string",
			"widgetType should not be empty", "widgetType must be a string", "properties must be an array"}},
		{"ErrEmptyName", `{"name":"","widgetType":"w","properties":[]}`, []string{"name should not be empty"}},
		{"ErrTypes", `{"id":5,"name":1,"widgetType":true,"properties":{},"description":3}`, []string{"id must be a string",
			"name must be a string", "widgetType must be a string", "description must be a string", "properties must be an array"}},
		{"ErrPropertyNotObject", `{"name":"n","widgetType":"w","properties":[1,{"a":1}]}`,
			[]string{"each value in properties must be an object"}},
		{"ErrEmptyID", `{"id":"","name":"n","widgetType":"w","properties":[]}`, []string{"id should not be empty"}},
		// What would become a field name the database reads as an operator or a path, or a
		// value of a type JSON does not have, is refused before it reaches the store.
		{"OKNestedJSON", `{"name":"n","widgetType":"w","properties":[{"a":{"b":[1,2.5,"x",true,null,{"c":-9007199254740993}]},"":1}]}`, nil},
		{"ErrDollarKey", `{"name":"n","widgetType":"w","properties":[{"k":1},{"$where":"1"}]}`,
			[]string{`properties.1 must not hold the key "$where": keys must not start with $ or contain a dot`}},
		{"ErrNestedDollarKey", `{"name":"n","widgetType":"w","properties":[{"a":[{"$set":{"x":1}}]}]}`,
			[]string{`properties.0.a.0 must not hold the key "$set": keys must not start with $ or contain a dot`}},
		{"ErrDottedKey", `{"name":"n","widgetType":"w","properties":[{"a.b":1}]}`,
			[]string{`properties.0 must not hold the key "a.b": keys must not start with $ or contain a dot`}},
		{"ErrDate", `{"name":"n","widgetType":"w","properties":[{"at":{"$date":"2026-01-01T00:00:00Z"}}]}`,
			[]string{"properties.0.at must hold only strings, numbers, booleans, null, objects and arrays"}},
		{"ErrJavaScript", `{"name":"n","widgetType":"w","properties":[{"f":{"$code":"function(){}"}}]}`,
			[]string{"properties.0.f must hold only strings, numbers, booleans, null, objects and arrays"}},
		{"ErrMinKey", `{"name":"n","widgetType":"w","properties":[{"m":[{"$minKey":1}]}]}`,
			[]string{"properties.0.m.0 must hold only strings, numbers, booleans, null, objects and arrays"}},
		{"ErrDeep", `{"name":"n","widgetType":"w","properties":[` + strings.Repeat(`{"a":`, 33) + `1` + strings.Repeat(`}`, 33) + `]}`,
			[]string{"properties.0" + strings.Repeat(".a", 32) + " must not be nested deeper than 32 levels"}},
		{"OKDeepest", `{"name":"n","widgetType":"w","properties":[` + strings.Repeat(`{"a":`, 32) + `1` + strings.Repeat(`}`, 32) + `]}`, nil},
		{"ErrLongID", `{"id":"` + strings.Repeat("x", 257) + `","name":"n","widgetType":"w","properties":[]}`,
			[]string{"id must be shorter than or equal to 256 characters"}},
		// Bounded, so that no user can make the shared list too large to read.
		{"OKLongestName", `{"name":"` + strings.Repeat("é", 256) + `","widgetType":"w","properties":[]}`, nil},
		// Characters are counted, not bytes, as the messages say: 256 "é" (512 bytes) and 256
		// "🎉" (1,024 bytes) are 256 characters.
		{"OKLongestIDAndWidgetType", `{"id":"` + strings.Repeat("é", 256) + `","name":"n","widgetType":"` + strings.Repeat("🎉", 256) + `","properties":[]}`, nil},
		{"ErrLongUnicodeIDAndWidgetType", `{"id":"` + strings.Repeat("é", 257) + `","name":"n","widgetType":"` + strings.Repeat("🎉", 257) + `","properties":[]}`,
			[]string{"id must be shorter than or equal to 256 characters", "widgetType must be shorter than or equal to 256 characters"}},
		{"ErrLongTexts", `{"name":"` + strings.Repeat("n", 257) + `","widgetType":"` + strings.Repeat("w", 257) +
			`","description":"` + strings.Repeat("d", 4097) + `","properties":[]}`,
			[]string{"name must be shorter than or equal to 256 characters", "widgetType must be shorter than or equal to 256 characters",
				"description must be shorter than or equal to 4096 characters"}},
		{"ErrLargeProperties", `{"name":"n","widgetType":"w","properties":[{"a":"` + strings.Repeat("x", 40000) + `"},{"b":"` + strings.Repeat("x", 40000) + `"}]}`,
			[]string{"properties must take at most 65536 bytes as stored (they take 80026)"}},
		// What the store cannot hold is refused too: NaN and infinities, a key twice.
		{"ErrNaN", `{"name":"n","widgetType":"w","properties":[{"v":{"$numberDouble":"NaN"}},{"w":[{"$numberDouble":"-Infinity"}]}]}`,
			[]string{"properties.0.v must be a finite number", "properties.1.w.0 must be a finite number"}},
		{"ErrDuplicateKey", `{"name":"n","widgetType":"w","properties":[{"a":{"b":1,"b":2}}]}`,
			[]string{`properties.0.a must not hold the key "b" twice`}},
		// The embedded store cannot hold an array inside an array, and a template must move
		// between stores: refused on every store.
		{"ErrNestedArray", `{"name":"n","widgetType":"w","properties":[{"v":[[1]]},{"w":{"x":[1,{"y":[2,[]]}]}}]}`,
			[]string{"properties.0.v.0 must not be an array: an array cannot hold arrays", "properties.1.w.x.1.y.1 must not be an array: an array cannot hold arrays"}},
		// An object the database cannot hold is named with the reason, not reported as no object.
		{"ErrUnreadableObjects", `{"name":"n","widgetType":"w","properties":[{"a\u0000b":1},{"n":[-1e400]},{"o":{"$oid":"zz"}},{"ok":1}]}`,
			[]string{"properties.0 cannot be stored: a key must not contain a NUL character",
				"properties.1 cannot be stored: a number is out of range",
				"properties.2 cannot be stored: it holds a malformed Extended JSON value"}},
		{"ErrUnreadableObjectAndNotObject", `{"name":"n","widgetType":"w","properties":[{"n":1e400},"x"]}`,
			[]string{"properties.0 cannot be stored: a number is out of range", "each value in properties must be an object"}},
		{"OKArraysInObjectsInArrays", `{"name":"n","widgetType":"w","properties":[{"v":[{"w":[1]},{"x":[]}]}]}`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var fields map[string]json.RawMessage
			if err := json.Unmarshal([]byte(tt.body), &fields); err != nil {
				t.Fatal(err)
			}
			_, err := templates.DecodeInput(fields)
			if tt.wantMsgs == nil {
				if err != nil {
					t.Fatalf("err=%v, want nil", err)
				}
				return
			}
			e := apperr.As(err)
			if e == nil || e.Kind != apperr.Invalid || !e.List {
				t.Fatalf("err=%v, want a validation error", err)
			}
			got, want := append([]string(nil), e.Messages...), append([]string(nil), tt.wantMsgs...)
			sort.Strings(got)
			sort.Strings(want)
			if d := cmp.Diff(want, got); d != "" {
				t.Fatalf("messages (-want +got):\n%s", d)
			}
		})
	}
}

// Ensure a template survives the JSON → BSON → JSON round trip with key order and number types.
func TestValue_RoundTrip(t *testing.T) {
	t.Parallel()
	in := `[{"key":"default","type":"string","value":"#ff0000","n":3,"f":1.5,"nested":{"z":1,"a":[true,null]}}]`
	var vs []templates.Value
	if err := json.Unmarshal([]byte(in), &vs); err != nil {
		t.Fatal(err)
	}
	doc, err := bson.Marshal(bson.D{{Key: "p", Value: vs}})
	if err != nil {
		t.Fatal(err)
	}
	var back struct {
		P []templates.Value `bson:"p"`
	}
	if err := bson.Unmarshal(doc, &back); err != nil {
		t.Fatal(err)
	}
	out, err := json.Marshal(back.P)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(out), in; got != want {
		t.Fatalf("round trip=%s, want %s", got, want)
	}
}

// Ensure create, read, list, update and delete work against core, with 409 and 404 where due.
func TestService_CRUD(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	spaceID, _ := e.seedSpace(t, storetest.DBName(t))

	created, err := e.svc.Create(ctx, input(t, `{"id":"colour","name":"Colour picker","widgetType":"color","properties":[{"key":"default","value":"#f00"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if created.ID != "colour" || created.CreatedAt == nil || created.UpdatedAt == nil {
		t.Fatalf("created=%+v", created)
	}
	if got := e.docs(t, e.core, "core_property_templates")["colour"]; len(got) != 1 || got[0]["name"] != "Colour picker" {
		t.Fatalf("core holds %v, want one colour template", got)
	}
	if _, err := e.svc.Create(ctx, input(t, `{"id":"colour","name":"x","widgetType":"x","properties":[]}`)); kind(err) != apperr.Conflict {
		t.Fatalf("duplicate create err=%v, want Conflict", err)
	}
	gen, err := e.svc.Create(ctx, input(t, `{"name":"Slider","widgetType":"slider","properties":[]}`))
	if err != nil || gen.ID == "" {
		t.Fatalf("create without id: %+v, %v", gen, err)
	}

	list, src, err := e.svc.List(ctx, spaceID, "")
	if err != nil || src != templates.SourceCore || len(list) != 2 {
		t.Fatalf("list=%d templates, source %q, err %v; want 2 from core", len(list), src, err)
	}
	list, _, _ = e.svc.List(ctx, spaceID, "slider")
	if len(list) != 1 || list[0].ID != gen.ID {
		t.Fatalf("list ?widgetType=slider = %+v", list)
	}
	got, src, err := e.svc.Get(ctx, spaceID, "colour")
	if err != nil || src != templates.SourceCore {
		t.Fatal(err, src)
	}
	js, _ := json.Marshal(got.Properties)
	if string(js) != `[{"key":"default","value":"#f00"}]` {
		t.Fatalf("properties=%s", js)
	}
	if w, _, err := e.svc.ForWidget(ctx, spaceID, "color"); err != nil || w.ID != "colour" {
		t.Fatalf("ForWidget(color)=%+v, %v", w, err)
	}
	if _, _, err := e.svc.ForWidget(ctx, spaceID, "nope"); kind(err) != apperr.NotFound {
		t.Fatalf("ForWidget(nope) err=%v, want NotFound", err)
	}

	upd, err := e.svc.Update(ctx, "colour", input(t, `{"id":"colour","name":"Colour v2","widgetType":"color","properties":[]}`))
	if err != nil || upd.Name != "Colour v2" || !upd.CreatedAt.Equal(created.CreatedAt.Time) {
		t.Fatalf("update=%+v, %v", upd, err)
	}
	if _, err := e.svc.Update(ctx, "missing", input(t, `{"name":"n","widgetType":"w","properties":[]}`)); kind(err) != apperr.NotFound {
		t.Fatalf("update missing err=%v, want NotFound", err)
	}
	if _, err := e.svc.Update(ctx, "colour", input(t, `{"id":"other","name":"n","widgetType":"w","properties":[]}`)); kind(err) != apperr.Invalid {
		t.Fatalf("update with another id err=%v, want Invalid", err)
	}

	if _, err := e.svc.Delete(ctx, "colour"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.svc.Get(ctx, spaceID, "colour"); kind(err) != apperr.NotFound {
		t.Fatalf("get after delete err=%v, want NotFound", err)
	}
	if _, err := e.svc.Delete(ctx, "colour"); kind(err) != apperr.NotFound {
		t.Fatalf("second delete err=%v, want NotFound", err)
	}
	if got := e.docs(t, e.core, "core_property_templates"); len(got["colour"]) != 0 || len(got) != 1 {
		t.Fatalf("core after delete holds %v", got)
	}
}

// deadURI is a MongoDB URI where nothing listens.
func deadURI(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return "mongodb://" + addr + "/?directConnection=true"
}

// Ensure reads come from the space when core is down, and writes fail with Unavailable.
func TestService_FallbackCoreDown(t *testing.T) {
	t.Parallel()
	dead, err := store.Connect(context.Background(), deadURI(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = dead.Disconnect(context.Background()) })
	e := newEnv(t, func(o *templates.Options) { o.Core = dead; o.CoreTimeout = 300 * time.Millisecond })
	now := time.Now()
	oidOnly := bson.D{{Key: "_id", Value: primitive.NewObjectID()}, {Key: "name", Value: "old"}, {Key: "widgetType", Value: "legacy"}}
	spaceID, _ := e.seedSpace(t, "", tdoc("a", "A", now), tdoc("b", "B", now), oidOnly)
	ctx := context.Background()

	list, src, err := e.svc.List(ctx, spaceID, "")
	if err != nil || src != templates.SourceSpace {
		t.Fatalf("list source %q err %v, want space", src, err)
	}
	var ids []string
	for _, tpl := range list {
		ids = append(ids, tpl.ID)
	}
	want := []string{"a", "b", oidOnly[0].Value.(primitive.ObjectID).Hex()}
	sort.Strings(want)
	if d := cmp.Diff(want, ids); d != "" {
		t.Fatalf("ids (-want +got):\n%s", d)
	}
	if got, src, err := e.svc.Get(ctx, spaceID, "b"); err != nil || src != templates.SourceSpace || got.Name != "B" {
		t.Fatalf("get b=%+v %q %v", got, src, err)
	}
	if got, _, err := e.svc.Get(ctx, spaceID, want[0]); err != nil || got.Name != "old" {
		t.Fatalf("get by _id=%+v %v", got, err)
	}
	if _, _, err := e.svc.Get(ctx, spaceID, "zzz"); kind(err) != apperr.NotFound {
		t.Fatalf("get missing err=%v, want NotFound", err)
	}
	if got, src, err := e.svc.ForWidget(ctx, spaceID, "legacy"); err != nil || src != templates.SourceSpace || got.Name != "old" {
		t.Fatalf("ForWidget=%+v %q %v", got, src, err)
	}
	if _, _, err := e.svc.List(ctx, primitive.NewObjectID().Hex(), ""); kind(err) != apperr.NotFound {
		t.Fatalf("list of an unknown space err=%v, want NotFound", err)
	}

	in := input(t, `{"id":"c","name":"C","widgetType":"w","properties":[]}`)
	if _, err := e.svc.Create(ctx, in); kind(err) != apperr.Unavailable {
		t.Fatalf("create err=%v, want Unavailable", err)
	}
	if _, err := e.svc.Update(ctx, "c", in); kind(err) != apperr.Unavailable {
		t.Fatalf("update err=%v, want Unavailable", err)
	}
	if _, err := e.svc.Delete(ctx, "a"); kind(err) != apperr.Unavailable {
		t.Fatalf("delete err=%v, want Unavailable", err)
	}
	if _, err := e.svc.Migrate(ctx, templates.MigrateOptions{}); kind(err) != apperr.Unavailable {
		t.Fatalf("migrate err=%v, want Unavailable", err)
	}
	if _, err := e.svc.Cleanup(ctx, templates.CleanupOptions{SpaceID: spaceID}); kind(err) != apperr.Unavailable {
		t.Fatalf("cleanup err=%v, want Unavailable", err)
	}
	if got := e.docs(t, "space_"+spaceID, "property_templates"); len(got) != 3 {
		t.Fatalf("cleanup with core down touched the space: %v", got)
	}
}

// migrationFixture: space A (space_<id>) and B (custom database) share "shared" in two versions
// (B's is newer), "same" identically; each has its own; C's database is missing.
type migrationFixture struct {
	a, b, c      string
	dbA, dbB     string
	ids          []string
	beforeA, bef map[string][]bson.M
}

func newMigrationFixture(t *testing.T, e *env) *migrationFixture {
	t.Helper()
	old, newer := time.Now().Add(-time.Hour).Truncate(time.Millisecond), time.Now().Truncate(time.Millisecond)
	f := &migrationFixture{ids: []string{"shared", "same", "only-a", "only-b"}}
	f.a, f.dbA = e.seedSpace(t, "", tdoc("shared", "old version", old), tdoc("same", "Same", old), tdoc("only-a", "A", old))
	f.b, f.dbB = e.seedSpace(t, storetest.DBName(t), tdoc("shared", "new version", newer), tdoc("same", "Same", old), tdoc("only-b", "B", old))
	f.c, _ = e.seedSpace(t, storetest.DBName(t)+"x")
	f.beforeA = e.docs(t, f.dbA, "property_templates")
	f.bef = e.docs(t, f.dbB, "property_templates")
	return f
}

// Ensure a dry run reports what a real run does, and writes nothing.
func TestService_MigrateDryRun(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	f := newMigrationFixture(t, e)
	var progress [][2]int
	rep, err := e.svc.Migrate(context.Background(), templates.MigrateOptions{DryRun: true,
		Progress: func(d, n int) { progress = append(progress, [2]int{d, n}) }})
	if err != nil {
		t.Fatal(err)
	}
	if got := e.docs(t, e.core, "core_property_templates"); len(got) != 0 {
		t.Fatalf("a dry run wrote to core: %v", got)
	}
	want := &templates.MigrationReport{SharedDatabases: []templates.SharedDatabase{}, DryRun: true, SpacesScanned: 2, TemplatesFound: 6, UniqueTemplates: 4, Migrated: 4,
		Conflicts: []templates.Conflict{{ID: "shared", Spaces: []string{f.a, f.b}, ChosenFrom: f.b}},
		Errors:    []templates.SpaceError{{SpaceID: f.c, Message: `database "` + e.docsName(f.c, t) + `" does not exist or has no property_templates collection`}}}
	rep.DurationMs = 0
	if d := cmp.Diff(want, rep); d != "" {
		t.Fatalf("report (-want +got):\n%s", d)
	}
	if got, want := progress[len(progress)-1], [2]int{3, 3}; got != want || len(progress) != 3 {
		t.Fatalf("progress=%v, want 3 calls ending %v", progress, want)
	}
}

func (e *env) docsName(spaceID string, t *testing.T) string {
	t.Helper()
	oid, _ := primitive.ObjectIDFromHex(spaceID)
	var sp bson.M
	if err := e.client.Database(e.app).Collection("spaces").FindOne(context.Background(), bson.D{{Key: "_id", Value: oid}}).Decode(&sp); err != nil {
		t.Fatal(err)
	}
	return sp["database"].(string)
}

// Ensure a real run dedupes across spaces, keeps the newest version, leaves spaces untouched,
// never overwrites core and is idempotent.
func TestService_MigrateRealRun(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	f := newMigrationFixture(t, e)
	ctx := context.Background()
	// core already holds only-a in its own version: it must not be overwritten.
	if _, err := e.client.Database(e.core).Collection("core_property_templates").InsertOne(ctx,
		bson.D{{Key: "_id", Value: "only-a"}, {Key: "name", Value: "core's own"}}); err != nil {
		t.Fatal(err)
	}
	rep, err := e.svc.Migrate(ctx, templates.MigrateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Migrated != 3 || rep.AlreadyInCore != 1 || rep.UniqueTemplates != 4 || rep.TemplatesFound != 6 || len(rep.Errors) != 1 {
		t.Fatalf("report=%+v", rep)
	}
	core := e.docs(t, e.core, "core_property_templates")
	for _, id := range f.ids {
		if len(core[id]) != 1 {
			t.Fatalf("core holds %d records of %s, want 1", len(core[id]), id)
		}
	}
	if got := core["shared"][0]["name"]; got != "new version" {
		t.Fatalf("shared in core is %q, want the newest version", got)
	}
	if got := core["only-a"][0]["name"]; got != "core's own" {
		t.Fatalf("only-a in core is %q: core was overwritten", got)
	}
	if _, ok := core["only-b"][0]["id"]; ok {
		t.Fatalf("core document keeps a separate id field: %v", core["only-b"][0])
	}
	if d := cmp.Diff(f.beforeA, e.docs(t, f.dbA, "property_templates")); d != "" {
		t.Fatalf("space A changed (-before +after):\n%s", d)
	}
	if d := cmp.Diff(f.bef, e.docs(t, f.dbB, "property_templates")); d != "" {
		t.Fatalf("space B changed (-before +after):\n%s", d)
	}
	list, _, err := e.svc.List(ctx, f.b, "")
	if err != nil || len(list) != 4 {
		t.Fatalf("list after migration: %d, %v", len(list), err)
	}

	again, err := e.svc.Migrate(ctx, templates.MigrateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if again.Migrated != 0 || again.AlreadyInCore != 4 {
		t.Fatalf("second run=%+v, want nothing migrated", again)
	}
	if got := e.docs(t, e.core, "core_property_templates"); len(got) != 4 {
		t.Fatalf("core after two runs holds %d ids, want 4", len(got))
	}
}

// Ensure two migrations at once leave exactly one record per id.
func TestService_MigrateConcurrent(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	now := time.Now()
	for s := range 6 {
		var docs []bson.D
		for i := range 10 {
			docs = append(docs, tdoc(string(rune('a'+(s+i)%12)), "T", now))
		}
		e.seedSpace(t, storetest.DBName(t), docs...)
	}
	var wg sync.WaitGroup
	reps := make([]*templates.MigrationReport, 2)
	errs := make([]error, 2)
	for i := range 2 {
		wg.Go(func() { reps[i], errs[i] = e.svc.Migrate(context.Background(), templates.MigrateOptions{}) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
	}
	core := e.docs(t, e.core, "core_property_templates")
	if len(core) != 12 {
		t.Fatalf("core holds %d ids, want 12", len(core))
	}
	for id, docs := range core {
		if len(docs) != 1 {
			t.Fatalf("core holds %d records of %s", len(docs), id)
		}
	}
	if got := reps[0].Migrated + reps[1].Migrated; got != 12 {
		t.Fatalf("migrated %d + %d, want 12 in all", reps[0].Migrated, reps[1].Migrated)
	}
	for _, r := range reps {
		if r.Migrated+r.AlreadyInCore != r.UniqueTemplates {
			t.Fatalf("report does not add up: %+v", r)
		}
	}
}

// Ensure cleanup deletes only what core holds (a version core does not hold is kept), refuses
// the core and application databases, and is a no-op the second time.
func TestService_Cleanup(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	now := time.Now()
	oidOnly := bson.D{{Key: "_id", Value: primitive.NewObjectID()}, {Key: "name", Value: "legacy"}}
	spaceID, db := e.seedSpace(t, "", tdoc("in-core", "x", now), tdoc("in-core", "dup", now), tdoc("not-in-core", "y", now), oidOnly)
	other, otherDB := e.seedSpace(t, storetest.DBName(t), tdoc("in-core", "x", now))
	inCore := tdoc("in-core", "x", now.Add(time.Hour))
	inCore[0] = bson.E{Key: "_id", Value: "in-core"}
	if _, err := e.client.Database(e.core).Collection("core_property_templates").InsertMany(ctx, []any{
		inCore, bson.D{{Key: "_id", Value: oidOnly[0].Value.(primitive.ObjectID).Hex()}, {Key: "name", Value: "legacy"}}}); err != nil {
		t.Fatal(err)
	}

	dry, err := e.svc.Cleanup(ctx, templates.CleanupOptions{SpaceID: spaceID, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	want := &templates.CleanupReport{SpaceID: spaceID, DryRun: true, Deleted: 2, KeptNotInCore: []string{"not-in-core"}, KeptDifferent: []string{"in-core"}}
	if d := cmp.Diff(want, dry); d != "" {
		t.Fatalf("dry run (-want +got):\n%s", d)
	}
	if got := e.docs(t, db, "property_templates"); len(got["in-core"]) != 2 {
		t.Fatalf("a dry run deleted: %v", got)
	}

	rep, err := e.svc.Cleanup(ctx, templates.CleanupOptions{SpaceID: spaceID})
	if err != nil {
		t.Fatal(err)
	}
	want.DryRun = false
	if d := cmp.Diff(want, rep); d != "" {
		t.Fatalf("cleanup (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"in-core=dup", "not-in-core=y"}, e.left(t, db)); d != "" {
		t.Fatalf("space after cleanup (-want +got):\n%s", d)
	}
	if got := e.docs(t, otherDB, "property_templates"); len(got["in-core"]) != 1 {
		t.Fatalf("cleanup of one space touched space %s: %v", other, got)
	}
	if got := e.docs(t, e.core, "core_property_templates"); len(got) != 2 {
		t.Fatalf("cleanup changed core: %v", got)
	}
	again, err := e.svc.Cleanup(ctx, templates.CleanupOptions{SpaceID: spaceID})
	if err != nil || again.Deleted != 0 {
		t.Fatalf("second cleanup=%+v, %v; want a no-op", again, err)
	}

	coreSpace, _ := e.seedSpace(t, e.core)
	appSpace, _ := e.seedSpace(t, e.app)
	for _, id := range []string{coreSpace, appSpace} {
		if _, err := e.svc.Cleanup(ctx, templates.CleanupOptions{SpaceID: id}); kind(err) != apperr.Conflict {
			t.Fatalf("cleanup of a space on the core/app database err=%v, want Conflict", err)
		}
	}
	if _, err := e.svc.Cleanup(ctx, templates.CleanupOptions{SpaceID: primitive.NewObjectID().Hex()}); kind(err) != apperr.NotFound {
		t.Fatalf("cleanup of an unknown space err=%v, want NotFound", err)
	}
}

// Ensure conflicts are found by content: copies whose fields (top-level or inside a property)
// were stored in another order are the same template; a different value or a different
// property order is a conflict.
func TestService_MigrateConflictByContent(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	at := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	prop := func(reversed bool) bson.D {
		if reversed {
			return bson.D{{Key: "type", Value: "string"}, {Key: "key", Value: "label"}}
		}
		return bson.D{{Key: "key", Value: "label"}, {Key: "type", Value: "string"}}
	}
	doc := func(id string, reversed bool, props ...bson.D) bson.D {
		a := bson.A{}
		for _, p := range props {
			a = append(a, p)
		}
		fields := bson.D{{Key: "id", Value: id}, {Key: "name", Value: "N"}, {Key: "widgetType", Value: "text"},
			{Key: "properties", Value: a}, {Key: "updatedAt", Value: at}}
		if reversed {
			slices.Reverse(fields)
		}
		return fields
	}
	other := bson.D{{Key: "key", Value: "size"}, {Key: "type", Value: "number"}}
	a, _ := e.seedSpace(t, "", doc("reordered", false, prop(false)), doc("nested", false, prop(false)),
		doc("props-swapped", false, prop(false), other), doc("changed", false, prop(false)))
	b, _ := e.seedSpace(t, storetest.DBName(t), doc("reordered", true, prop(false)), doc("nested", false, prop(true)),
		doc("props-swapped", false, other, prop(false)), doc("changed", false, bson.D{{Key: "key", Value: "label"}, {Key: "type", Value: "text"}}))
	rep, err := e.svc.Migrate(context.Background(), templates.MigrateOptions{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range rep.Conflicts {
		got = append(got, c.ID)
		if d := cmp.Diff([]string{a, b}, c.Spaces); d != "" {
			t.Errorf("conflict %s spaces (-want +got):\n%s", c.ID, d)
		}
	}
	if d := cmp.Diff([]string{"changed", "props-swapped"}, got); d != "" {
		t.Fatalf("conflicts (-want +got):\n%s", d)
	}
}

// left returns the identifiers and names of the documents left in a space database, as
// "id=name", sorted.
func (e *env) left(t *testing.T, db string) []string {
	t.Helper()
	cur, err := e.client.Database(db).Collection("property_templates").Find(context.Background(), bson.D{})
	if err != nil {
		t.Fatal(err)
	}
	var all []bson.M
	if err := cur.All(context.Background(), &all); err != nil {
		t.Fatal(err)
	}
	out := []string{}
	for _, d := range all {
		id := d["id"]
		if id == nil {
			id = d["_id"]
		}
		out = append(out, fmt.Sprintf("%v=%v", id, d["name"]))
	}
	sort.Strings(out)
	return out
}

// Ensure cleanup deletes a space document only when core holds its content (name, widgetType,
// description and properties, compared canonically), not merely its identifier: a version that
// never reached core is kept and listed in keptDifferent, in a dry run as in a real run.
func TestService_CleanupComparesContent(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 1, 10, 8, 0, 0, 0, time.UTC)
	props := func(kv ...any) bson.A {
		p := bson.D{}
		for i := 0; i < len(kv); i += 2 {
			p = append(p, bson.E{Key: kv[i].(string), Value: kv[i+1]})
		}
		return bson.A{p}
	}
	tests := []struct {
		name      string
		space     []bson.D
		core      []bson.D
		wantLeft  []string
		wantDel   int
		wantNotIn []string
		wantDiff  []string
	}{
		{"OKSameContent",
			[]bson.D{{{Key: "id", Value: "a"}, {Key: "name", Value: "A"}, {Key: "widgetType", Value: "text"}, {Key: "properties", Value: props("k", "v", "n", int32(1))}, {Key: "updatedAt", Value: at}}},
			[]bson.D{{{Key: "_id", Value: "a"}, {Key: "name", Value: "A"}, {Key: "widgetType", Value: "text"}, {Key: "properties", Value: props("k", "v", "n", int32(1))}}},
			[]string{}, 1, []string{}, []string{}},
		// Fields stored in another order, at the top or inside a property, other timestamps and
		// another _id: the same template.
		{"OKOtherOrderAndTimestamps",
			[]bson.D{{{Key: "properties", Value: props("n", int32(1), "k", "v")}, {Key: "widgetType", Value: "text"}, {Key: "name", Value: "A"}, {Key: "id", Value: "a"}, {Key: "createdAt", Value: at}}},
			[]bson.D{{{Key: "_id", Value: "a"}, {Key: "name", Value: "A"}, {Key: "widgetType", Value: "text"}, {Key: "properties", Value: props("k", "v", "n", int32(1))}, {Key: "updatedAt", Value: at.Add(time.Hour)}}},
			[]string{}, 1, []string{}, []string{}},
		// Core holds the identifier, created through the API, with another content.
		{"KeptOtherName",
			[]bson.D{{{Key: "id", Value: "priority"}, {Key: "name", Value: "Priority (team A, 6 levels)"}, {Key: "widgetType", Value: "select"}, {Key: "properties", Value: props("levels", int32(6))}}},
			[]bson.D{{{Key: "_id", Value: "priority"}, {Key: "name", Value: "Priority"}, {Key: "widgetType", Value: "select"}, {Key: "properties", Value: props("levels", int32(6))}}},
			[]string{"priority=Priority (team A, 6 levels)"}, 0, []string{}, []string{"priority"}},
		{"KeptOtherNumberType",
			[]bson.D{{{Key: "id", Value: "a"}, {Key: "name", Value: "A"}, {Key: "widgetType", Value: "text"}, {Key: "properties", Value: props("n", int32(1))}}},
			[]bson.D{{{Key: "_id", Value: "a"}, {Key: "name", Value: "A"}, {Key: "widgetType", Value: "text"}, {Key: "properties", Value: props("n", 1.0)}}},
			[]string{"a=A"}, 0, []string{}, []string{"a"}},
		{"KeptDescriptionOnlyInSpace",
			[]bson.D{{{Key: "id", Value: "a"}, {Key: "name", Value: "A"}, {Key: "widgetType", Value: "text"}, {Key: "properties", Value: bson.A{}}, {Key: "description", Value: "d"}}},
			[]bson.D{{{Key: "_id", Value: "a"}, {Key: "name", Value: "A"}, {Key: "widgetType", Value: "text"}, {Key: "properties", Value: bson.A{}}}},
			[]string{"a=A"}, 0, []string{}, []string{"a"}},
		// Two documents of one identifier, and 5, "5" and 5.0 (one identifier): only the
		// version core holds is deleted.
		{"OneVersionInCore",
			[]bson.D{
				{{Key: "id", Value: "dup"}, {Key: "name", Value: "first"}, {Key: "widgetType", Value: "text"}, {Key: "properties", Value: bson.A{}}},
				{{Key: "id", Value: "dup"}, {Key: "name", Value: "second"}, {Key: "widgetType", Value: "text"}, {Key: "properties", Value: bson.A{}}},
				{{Key: "id", Value: int32(5)}, {Key: "name", Value: "int"}, {Key: "widgetType", Value: "text"}, {Key: "properties", Value: bson.A{}}},
				{{Key: "id", Value: "5"}, {Key: "name", Value: "string"}, {Key: "widgetType", Value: "text"}, {Key: "properties", Value: bson.A{}}},
				{{Key: "id", Value: 5.0}, {Key: "name", Value: "double"}, {Key: "widgetType", Value: "text"}, {Key: "properties", Value: bson.A{}}},
				{{Key: "id", Value: "mine"}, {Key: "name", Value: "M"}}},
			[]bson.D{
				{{Key: "_id", Value: "dup"}, {Key: "name", Value: "second"}, {Key: "widgetType", Value: "text"}, {Key: "properties", Value: bson.A{}}},
				{{Key: "_id", Value: "5"}, {Key: "name", Value: "string"}, {Key: "widgetType", Value: "text"}, {Key: "properties", Value: bson.A{}}}},
			[]string{"5=double", "5=int", "dup=first", "mine=M"}, 2, []string{"mine"}, []string{"5", "dup"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			ctx := context.Background()
			spaceID, db := e.seedSpace(t, "", tt.space...)
			for _, d := range tt.core {
				if _, err := e.client.Database(e.core).Collection("core_property_templates").InsertOne(ctx, d); err != nil {
					t.Fatal(err)
				}
			}
			before := e.left(t, db)
			for _, dry := range []bool{true, false} {
				rep, err := e.svc.Cleanup(ctx, templates.CleanupOptions{SpaceID: spaceID, DryRun: dry})
				if err != nil {
					t.Fatal(err)
				}
				wantLeft := tt.wantLeft
				if dry {
					wantLeft = before
				}
				if d := cmp.Diff(wantLeft, e.left(t, db)); d != "" {
					t.Fatalf("dry run %v: space holds (-want +got):\n%s", dry, d)
				}
				want := &templates.CleanupReport{SpaceID: spaceID, DryRun: dry, Deleted: tt.wantDel, KeptNotInCore: tt.wantNotIn, KeptDifferent: tt.wantDiff}
				if d := cmp.Diff(want, rep); d != "" {
					t.Fatalf("dry run %v: report (-want +got):\n%s", dry, d)
				}
			}
		})
	}
}

// Ensure that after a real migration, cleanup deletes exactly the space documents whose version
// reached core: the copies of a template core already held in another version, and the
// versions of an identifier that lost to another, stay in the space.
func TestService_CleanupAfterMigrateKeepsWhatNeverReachedCore(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	if _, err := e.svc.Create(ctx, input(t, `{"id":"priority","name":"Priority","widgetType":"select","properties":[{"levels":3}]}`)); err != nil {
		t.Fatal(err)
	}
	old, newer := time.Now().Add(-time.Hour).Truncate(time.Millisecond), time.Now().Truncate(time.Millisecond)
	spaceID, db := e.seedSpace(t, "",
		bson.D{{Key: "id", Value: "priority"}, {Key: "name", Value: "Priority (team A, 6 levels)"}, {Key: "widgetType", Value: "select"},
			{Key: "properties", Value: bson.A{bson.D{{Key: "levels", Value: int32(6)}}}}},
		tdoc("dup", "older", old), tdoc("dup", "newer", newer),
		bson.D{{Key: "id", Value: int32(5)}, {Key: "name", Value: "int"}, {Key: "widgetType", Value: "text"}, {Key: "properties", Value: bson.A{}}},
		bson.D{{Key: "id", Value: "5"}, {Key: "name", Value: "string"}, {Key: "widgetType", Value: "text"}, {Key: "properties", Value: bson.A{}}},
		bson.D{{Key: "id", Value: 5.0}, {Key: "name", Value: "double"}, {Key: "widgetType", Value: "text"}, {Key: "properties", Value: bson.A{}}},
		tdoc("plain", "P", old))
	if _, err := e.svc.Migrate(ctx, templates.MigrateOptions{}); err != nil {
		t.Fatal(err)
	}
	core := e.docs(t, e.core, "core_property_templates")
	rep, err := e.svc.Cleanup(ctx, templates.CleanupOptions{SpaceID: spaceID})
	if err != nil {
		t.Fatal(err)
	}
	// 5, "5" and 5.0 have no updatedAt: the first seen wins.
	want := []string{"5=double", "5=string", "dup=older", "priority=Priority (team A, 6 levels)"}
	if got := core["5"][0]["name"]; got != "int" {
		t.Fatalf("core holds 5 from %v, want the first seen (int)", got)
	}
	if d := cmp.Diff(want, e.left(t, db)); d != "" {
		t.Fatalf("space after cleanup (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"5", "dup", "priority"}, rep.KeptDifferent); d != "" || rep.Deleted != 3 {
		t.Fatalf("report %+v; keptDifferent (-want +got):\n%s", rep, d)
	}
}

// outOfRange are timestamps outside the years 0 to 9999, as legacy data holds them: a date in
// year 10000, epoch microseconds stored as a NumberLong (read as milliseconds: year 57000), an
// ISO string whose offset puts it in year -1 in UTC, and a double beyond int64's range.
var outOfRange = []any{
	primitive.NewDateTimeFromTime(time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)),
	int64(1736500000000000),
	"0000-01-01T00:00:00+01:00",
	-1e300,
}

// Ensure a stored template whose timestamp is outside the years 0 to 9999 is read and answered
// (as JSON too) without that timestamp, by every read and by delete.
func TestService_OutOfRangeTimestampsAreAnswered(t *testing.T) {
	t.Parallel()
	for i, ts := range outOfRange {
		t.Run(fmt.Sprintf("%T", ts), func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			ctx := context.Background()
			ok := time.Date(2026, 1, 10, 8, 0, 0, 0, time.UTC)
			id := fmt.Sprintf("t%d", i)
			if _, err := e.client.Database(e.core).Collection("core_property_templates").InsertOne(ctx, bson.D{{Key: "_id", Value: id},
				{Key: "name", Value: "N"}, {Key: "widgetType", Value: "w"}, {Key: "properties", Value: bson.A{}},
				{Key: "createdAt", Value: ok}, {Key: "updatedAt", Value: ts}}); err != nil {
				t.Fatal(err)
			}
			check := func(op string, tpl templates.Template, err error) {
				t.Helper()
				if err != nil {
					t.Fatalf("%s: %v", op, err)
				}
				js, err := json.Marshal(tpl)
				if err != nil {
					t.Fatalf("%s: json: %v", op, err)
				}
				if tpl.UpdatedAt != nil || tpl.CreatedAt == nil || !tpl.CreatedAt.Equal(ok) || strings.Contains(string(js), "updatedAt") {
					t.Fatalf("%s: %s, want the template without updatedAt", op, js)
				}
			}
			list, _, err := e.svc.List(ctx, "", "")
			if err != nil || len(list) != 1 {
				t.Fatalf("list: %v, %v", list, err)
			}
			check("list", list[0], nil)
			got, _, err := e.svc.Get(ctx, "", id)
			check("get", got, err)
			got, _, err = e.svc.ForWidget(ctx, "", "w")
			check("widget", got, err)
			got, err = e.svc.Delete(ctx, id)
			check("delete", got, err)
		})
	}
}

// Ensure migration refuses a template whose timestamp is outside the years 0 to 9999, naming
// its space and identifier in errors (in a dry run too), and migrates the rest.
func TestService_MigrateRefusesOutOfRangeTimestamps(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	docs := []bson.D{tdoc("fine", "F", time.Now())}
	var wantErrs []templates.SpaceError
	for i, ts := range outOfRange {
		field := []string{"updatedAt", "createdAt"}[i%2]
		d := tdoc(fmt.Sprintf("bad%d", i), "B", time.Now())
		d = append(d, bson.E{Key: field, Value: ts})
		if field == "updatedAt" {
			d = slices.Delete(d, 4, 5) // the first updatedAt
		}
		docs = append(docs, d)
		wantErrs = append(wantErrs, templates.SpaceError{TemplateID: fmt.Sprintf("bad%d", i), Message: field + " must be a date between the years 0 and 9999"})
	}
	spaceID, _ := e.seedSpace(t, "", docs...)
	for i := range wantErrs {
		wantErrs[i].SpaceID = spaceID
	}
	for _, dry := range []bool{true, false} {
		rep, err := e.svc.Migrate(ctx, templates.MigrateOptions{DryRun: dry})
		if err != nil {
			t.Fatal(err)
		}
		rep.DurationMs = 0
		want := &templates.MigrationReport{SharedDatabases: []templates.SharedDatabase{}, DryRun: dry, SpacesScanned: 1, TemplatesFound: 5, UniqueTemplates: 1, Migrated: 1,
			Conflicts: []templates.Conflict{}, Errors: wantErrs}
		if d := cmp.Diff(want, rep); d != "" {
			t.Fatalf("dry run %v: report (-want +got):\n%s", dry, d)
		}
	}
	if d := cmp.Diff([]string{"fine"}, slices.Sorted(maps.Keys(e.docs(t, e.core, "core_property_templates")))); d != "" {
		t.Fatalf("core holds (-want +got):\n%s", d)
	}
}

// Ensure migration applies the API's rules to each space document: a template the API would
// refuse is not copied and is listed in errors with its space, identifier and every reason, in a
// dry run as in a real run; the valid ones are migrated.
func TestService_MigrateRefusesWhatTheAPIRefuses(t *testing.T) {
	t.Parallel()
	valid := func(id string, change ...bson.E) bson.D {
		d := bson.D{{Key: "id", Value: id}, {Key: "name", Value: "N"}, {Key: "widgetType", Value: "text"},
			{Key: "properties", Value: bson.A{bson.D{{Key: "k", Value: "v"}}}}, {Key: "description", Value: "d"}}
		for _, c := range change {
			if i := slices.IndexFunc(d, func(e bson.E) bool { return e.Key == c.Key }); i >= 0 {
				d[i] = c
			} else {
				d = append(d, c)
			}
		}
		return bson.D(slices.DeleteFunc(d, func(e bson.E) bool { return e.Value == nil }))
	}
	big := bson.A{bson.D{{Key: "blob", Value: strings.Repeat("x", 100_000)}}}
	var deep any = int32(1)
	for range 33 {
		deep = bson.D{{Key: "a", Value: deep}}
	}
	tests := []struct {
		name    string
		doc     bson.D
		wantMsg string // "" : migrated
	}{
		{"OK", valid("ok"), ""},
		{"OKUnknownFieldsAndNullDescription", valid("extra", bson.E{Key: "legacy", Value: bson.D{{Key: "owner", Value: "team A"}}}, bson.E{Key: "description", Value: primitive.Null{}}), ""},
		{"OKIntegerID", valid("", bson.E{Key: "id", Value: int32(42)}), ""},
		{"ErrLongName", valid("long-name", bson.E{Key: "name", Value: strings.Repeat("n", 10_000)}), "name must be shorter than or equal to 256 characters"},
		{"ErrLongTexts", valid("long-texts", bson.E{Key: "widgetType", Value: strings.Repeat("w", 257)}, bson.E{Key: "description", Value: strings.Repeat("d", 4097)}),
			"widgetType must be shorter than or equal to 256 characters; description must be shorter than or equal to 4096 characters"},
		{"ErrLargeProperties", valid("large", bson.E{Key: "properties", Value: big}), "properties must take at most 65536 bytes as stored (they take 100016)"},
		{"ErrNameNotString", valid("int-name", bson.E{Key: "name", Value: int32(7)}), "name must be a string"},
		{"ErrNullName", valid("null-name", bson.E{Key: "name", Value: primitive.Null{}}), "name should not be empty; name must be a string"},
		{"ErrNoWidgetType", valid("no-widget", bson.E{Key: "widgetType", Value: nil}), "widgetType should not be empty; widgetType must be a string"},
		{"ErrPropertiesNotArray", valid("props-object", bson.E{Key: "properties", Value: bson.D{{Key: "k", Value: 1}}}), "properties must be an array"},
		{"ErrNoProperties", valid("no-props", bson.E{Key: "properties", Value: nil}), "properties must be an array"},
		{"ErrPropertyNotObject", valid("props-strings", bson.E{Key: "properties", Value: bson.A{"a"}}), "each value in properties must be an object"},
		{"ErrDeep", valid("deep", bson.E{Key: "properties", Value: bson.A{deep}}),
			"properties.0" + strings.Repeat(".a", 32) + " must not be nested deeper than 32 levels"},
		{"ErrDate", valid("date", bson.E{Key: "properties", Value: bson.A{bson.D{{Key: "at", Value: time.Now()}}}}),
			"properties.0.at must hold only strings, numbers, booleans, null, objects and arrays"},
		{"ErrLongID", valid(strings.Repeat("i", 257)), "id must be shorter than or equal to 256 characters"},
	}
	e := newEnv(t)
	ctx := context.Background()
	var docs []bson.D
	wantCore := []string{}
	for _, tt := range tests {
		docs = append(docs, tt.doc)
	}
	spaceID, _ := e.seedSpace(t, "", docs...)
	wantErrs := []templates.SpaceError{}
	for _, tt := range tests {
		id := fmt.Sprint(tt.doc[slices.IndexFunc(tt.doc, func(e bson.E) bool { return e.Key == "id" })].Value)
		if tt.wantMsg == "" {
			wantCore = append(wantCore, id)
		} else {
			wantErrs = append(wantErrs, templates.SpaceError{SpaceID: spaceID, TemplateID: id, Message: tt.wantMsg})
		}
	}
	sort.Strings(wantCore)
	for _, dry := range []bool{true, false} {
		rep, err := e.svc.Migrate(ctx, templates.MigrateOptions{DryRun: dry})
		if err != nil {
			t.Fatal(err)
		}
		rep.DurationMs = 0
		want := &templates.MigrationReport{SharedDatabases: []templates.SharedDatabase{}, DryRun: dry, SpacesScanned: 1, TemplatesFound: len(tests), UniqueTemplates: len(wantCore),
			Migrated: len(wantCore), Conflicts: []templates.Conflict{}, Errors: wantErrs}
		if d := cmp.Diff(want, rep); d != "" {
			t.Fatalf("dry run %v: report (-want +got):\n%s", dry, d)
		}
	}
	if d := cmp.Diff(wantCore, slices.Sorted(maps.Keys(e.docs(t, e.core, "core_property_templates")))); d != "" {
		t.Fatalf("core holds (-want +got):\n%s", d)
	}
	list, _, err := e.svc.List(ctx, "", "")
	if err != nil || len(list) != len(wantCore) {
		t.Fatalf("list after migration: %d templates, %v", len(list), err)
	}
}

// Ensure a template core would refuse to store does not stop the migration: a space document of
// the maximum size whose core copy would be larger (its ObjectId _id becomes a 24-character
// string) is listed in errors with its space and id, in a dry run too; one core refuses on a
// unique index of its own is listed (not counted as already in core); the rest is migrated.
func TestService_MigrateReportsWhatCoreRefuses(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	coreColl := e.client.Database(e.core).Collection("core_property_templates")
	if _, err := coreColl.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "name", Value: 1}},
		Options: options.Index().SetUnique(true)}); err != nil {
		t.Fatal(err)
	}
	if _, err := coreColl.InsertOne(ctx, bson.D{{Key: "_id", Value: "other"}, {Key: "name", Value: "Taken"}}); err != nil {
		t.Fatal(err)
	}
	oid := primitive.NewObjectID()
	huge := bson.D{{Key: "_id", Value: oid}, {Key: "name", Value: "Huge"}, {Key: "widgetType", Value: "w"},
		{Key: "properties", Value: bson.A{}}, {Key: "notes", Value: ""}}
	raw, _ := bson.Marshal(huge)
	huge[4].Value = strings.Repeat("y", 16<<20-len(raw))
	if raw, _ = bson.Marshal(huge); len(raw) != 16<<20 {
		t.Fatalf("the huge document takes %d bytes", len(raw))
	}
	spaceID, _ := e.seedSpace(t, "", huge, tdoc("taken", "Taken", time.Now()), tdoc("fine", "Fine", time.Now()))
	tooLarge := templates.SpaceError{SpaceID: spaceID, TemplateID: oid.Hex(),
		Message: "the template would take 16777233 bytes in core, more than the 16777216 bytes a document may take"}

	dry, err := e.svc.Migrate(ctx, templates.MigrateOptions{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	dry.DurationMs = 0
	want := &templates.MigrationReport{SharedDatabases: []templates.SharedDatabase{}, DryRun: true, SpacesScanned: 1, TemplatesFound: 3, UniqueTemplates: 2, Migrated: 2,
		Conflicts: []templates.Conflict{}, Errors: []templates.SpaceError{tooLarge}}
	if d := cmp.Diff(want, dry); d != "" {
		t.Fatalf("dry run (-want +got):\n%s", d)
	}

	rep, err := e.svc.Migrate(ctx, templates.MigrateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Migrated != 1 || rep.AlreadyInCore != 0 || len(rep.Errors) != 2 || rep.Errors[0] != tooLarge {
		t.Fatalf("report %+v, want 1 migrated and 2 errors", rep)
	}
	if got := rep.Errors[1]; got.SpaceID != spaceID || got.TemplateID != "taken" || !strings.HasPrefix(got.Message, "core refused the template: ") {
		t.Fatalf("error %+v, want core's refusal of taken", got)
	}
	if d := cmp.Diff([]string{"fine", "other"}, slices.Sorted(maps.Keys(e.docs(t, e.core, "core_property_templates")))); d != "" {
		t.Fatalf("core holds (-want +got):\n%s", d)
	}
}

// Ensure a space whose _id is a number (an int32, an int64, a whole double) is found by the
// identifier the migration reports for it: cleanup and the space fallback of reads find it.
func TestService_NumericSpaceID(t *testing.T) {
	t.Parallel()
	base := time.Now().UnixNano() % 1_000_000_000
	tests := []struct {
		name string
		id   any
		want string
	}{
		{"Int32", int32(base), strconv.FormatInt(base, 10)},
		{"Int64", base + 1<<40, strconv.FormatInt(base+1<<40, 10)},
		{"Double", float64(base + 7), strconv.FormatInt(base+7, 10)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			ctx := context.Background()
			db := "space_" + tt.want
			t.Cleanup(func() { _ = e.client.Database(db).Drop(context.Background()) })
			if _, err := e.client.Database(e.app).Collection("spaces").InsertOne(ctx, bson.D{{Key: "_id", Value: tt.id}}); err != nil {
				t.Fatal(err)
			}
			if _, err := e.client.Database(db).Collection("property_templates").InsertOne(ctx, tdoc("t", "T", time.Now())); err != nil {
				t.Fatal(err)
			}
			rep, err := e.svc.Migrate(ctx, templates.MigrateOptions{})
			if err != nil || rep.SpacesScanned != 1 || rep.Migrated != 1 {
				t.Fatalf("migrate: %+v, %v", rep, err)
			}
			clean, err := e.svc.Cleanup(ctx, templates.CleanupOptions{SpaceID: tt.want})
			if err != nil {
				t.Fatalf("cleanup of space %s: %v", tt.want, err)
			}
			if clean.SpaceID != tt.want || clean.Deleted != 1 || len(e.docs(t, db, "property_templates")) != 0 {
				t.Fatalf("cleanup report %+v, want 1 deleted from %s", clean, db)
			}
			if _, err := e.svc.Cleanup(ctx, templates.CleanupOptions{SpaceID: "0" + tt.want}); kind(err) != apperr.NotFound {
				t.Fatalf("cleanup of space 0%s err=%v, want NotFound (not the migration's identifier)", tt.want, err)
			}
		})
	}
}

// Ensure a space named "NaN" is looked up as the string it is: the embedded store refuses a
// filter holding a NaN, which answered 503 "the application database is unavailable" for a
// space that merely does not exist.
func TestService_SpaceIDNaN(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		seed    bool // a space whose _id is the string "NaN"
		wantErr bool // NotFound
	}{
		{"ErrNotFound", false, true},
		{"OKStringID", true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			ctx := context.Background()
			db := storetest.DBName(t)
			if tt.seed {
				if _, err := e.client.Database(e.app).Collection("spaces").InsertOne(ctx, bson.D{{Key: "_id", Value: "NaN"}, {Key: "database", Value: db}}); err != nil {
					t.Fatal(err)
				}
				if _, err := e.client.Database(db).Collection("property_templates").InsertOne(ctx, tdoc("t", "T", time.Now())); err != nil {
					t.Fatal(err)
				}
			}
			rep, err := e.svc.Cleanup(ctx, templates.CleanupOptions{SpaceID: "NaN", DryRun: true})
			if tt.wantErr && kind(err) != apperr.NotFound || !tt.wantErr && err != nil {
				t.Fatalf("cleanup of space NaN: err=%v, want NotFound: %v", err, tt.wantErr)
			}
			if tt.seed && (rep.SpaceID != "NaN" || !slices.Equal(rep.KeptNotInCore, []string{"t"})) {
				t.Fatalf("cleanup report %+v, want space NaN keeping t", rep)
			}
		})
	}
}

// Ensure a template's createdAt and updatedAt are written as JavaScript's toISOString writes
// them (UTC, always three fractional digits), whether the service set them or read them from a
// space's ISO string, as property values are.
func TestTemplate_TimestampsAsToISOString(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		now  time.Time
		want string
	}{
		{"TrailingZero", time.Date(2026, 11, 28, 2, 30, 48, 510_000_000, time.UTC), "2026-11-28T02:30:48.510Z"},
		{"WholeSecond", time.Date(2026, 11, 28, 2, 30, 48, 0, time.UTC), "2026-11-28T02:30:48.000Z"},
		{"SubMillisecondDropped", time.Date(2026, 11, 28, 2, 30, 48, 510_900_000, time.UTC), "2026-11-28T02:30:48.510Z"},
		{"OtherZone", time.Date(2026, 11, 28, 3, 30, 48, 5_000_000, time.FixedZone("CET", 3600)), "2026-11-28T02:30:48.005Z"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, func(o *templates.Options) { o.Now = func() time.Time { return tt.now } })
			ctx := context.Background()
			created, err := e.svc.Create(ctx, input(t, `{"id":"a","name":"A","widgetType":"w","properties":[{"at":1}]}`))
			if err != nil {
				t.Fatal(err)
			}
			got, _, err := e.svc.Get(ctx, "", "a")
			if err != nil {
				t.Fatal(err)
			}
			want := `{"id":"a","name":"A","widgetType":"w","properties":[{"at":1}],"createdAt":"` + tt.want + `","updatedAt":"` + tt.want + `"}`
			for _, tpl := range []templates.Template{created, got} {
				js, err := json.Marshal(tpl)
				if err != nil || string(js) != want {
					t.Fatalf("JSON %s (%v), want %s", js, err, want)
				}
			}
		})
	}
	// A space's ISO string, with more digits or fewer, is answered alike.
	e := newEnv(t, func(o *templates.Options) { o.Core = deadClient(t); o.CoreTimeout = 300 * time.Millisecond })
	spaceID, _ := e.seedSpace(t, "", bson.D{{Key: "id", Value: "s"}, {Key: "name", Value: "S"}, {Key: "widgetType", Value: "w"},
		{Key: "properties", Value: bson.A{}}, {Key: "createdAt", Value: "2026-11-28T03:30:48.5+01:00"}, {Key: "updatedAt", Value: "2026-11-28T02:30:48.510999Z"}})
	got, src, err := e.svc.Get(context.Background(), spaceID, "s")
	if err != nil || src != templates.SourceSpace {
		t.Fatalf("get from the space: %v, %v", src, err)
	}
	js, _ := json.Marshal(got)
	if want := `"createdAt":"2026-11-28T02:30:48.500Z","updatedAt":"2026-11-28T02:30:48.510Z"`; !strings.Contains(string(js), want) {
		t.Fatalf("JSON %s, want %s", js, want)
	}
}

// deadClient is a client of a MongoDB URI where nothing listens.
func deadClient(t *testing.T) *mongo.Client {
	t.Helper()
	dead, err := store.Connect(context.Background(), deadURI(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = dead.Disconnect(context.Background()) })
	return dead
}

// Ensure a space whose _id cannot name a space (empty, blank, or neither a string, an ObjectId
// nor a number) is listed in errors with its database unscanned, in a dry run as in a real run,
// while the other spaces are migrated.
func TestService_MigrateReportsUnusableSpaceIDs(t *testing.T) {
	t.Parallel()
	const other = "(a string, an ObjectId or a number can)"
	tests := []struct {
		name     string
		id       any
		database bool // the space names a database holding a template ("orphan")
		wantID   string
		wantMsg  string // %[1]q: that database, when named
	}{
		{"ErrEmptyString", "", true, "", `the space's _id is an empty string, which cannot name a space; its database %[1]q is not scanned`},
		{"ErrEmptyStringNoDatabase", "", false, "", `the space's _id is an empty string, which cannot name a space; no database is scanned for it`},
		{"ErrBlankString", " \t", true, " \t", `the space's _id is blank, which cannot name a space; its database %[1]q is not scanned`},
		{"ErrNull", primitive.Null{}, true, "null", `the space's _id is of type null, which cannot name a space ` + other + `; its database %[1]q is not scanned`},
		{"ErrNullNoDatabase", primitive.Null{}, false, "null", `the space's _id is of type null, which cannot name a space ` + other + `; no database is scanned for it`},
		{"ErrBoolean", true, true, "true", `the space's _id is of type boolean, which cannot name a space ` + other + `; its database %[1]q is not scanned`},
		{"ErrDocument", bson.D{{Key: "a", Value: "b"}}, true, `{"a": "b"}`, `the space's _id is of type embedded document, which cannot name a space ` + other + `; its database %[1]q is not scanned`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			ctx := context.Background()
			now := time.Now().Truncate(time.Millisecond)
			e.seedSpace(t, "", tdoc("good", "G", now))
			orphans := storetest.DBName(t)
			if _, err := e.client.Database(orphans).Collection("property_templates").InsertOne(ctx, tdoc("orphan", "O", now)); err != nil {
				t.Fatal(err)
			}
			sp := bson.D{{Key: "_id", Value: tt.id}}
			if tt.database {
				sp = append(sp, bson.E{Key: "database", Value: orphans})
			}
			if _, err := e.client.Database(e.app).Collection("spaces").InsertOne(ctx, sp); err != nil {
				t.Fatal(err)
			}
			for _, dry := range []bool{true, false} {
				rep, err := e.svc.Migrate(ctx, templates.MigrateOptions{DryRun: dry})
				if err != nil {
					t.Fatal(err)
				}
				rep.DurationMs = 0
				msg := tt.wantMsg
				if tt.database {
					msg = fmt.Sprintf(msg, orphans)
				}
				want := &templates.MigrationReport{SharedDatabases: []templates.SharedDatabase{}, DryRun: dry, SpacesScanned: 1, TemplatesFound: 1, UniqueTemplates: 1,
					Migrated: 1, Conflicts: []templates.Conflict{}, Errors: []templates.SpaceError{{SpaceID: tt.wantID, Message: msg}}}
				if d := cmp.Diff(want, rep); d != "" {
					t.Fatalf("dry run %v: report (-want +got):\n%s", dry, d)
				}
			}
			if d := cmp.Diff([]string{"good"}, slices.Sorted(maps.Keys(e.docs(t, e.core, "core_property_templates")))); d != "" {
				t.Fatalf("core holds (-want +got):\n%s", d)
			}
		})
	}
}

// Ensure spaces naming one database have it scanned once, in a dry run as in a real run: its
// templates are found once, a template it refuses is listed once (under the first of them), a
// conflict lists every space holding the identifier, a missing shared database is an error for
// each of its spaces, and the report says which spaces share which database.
func TestService_MigrateScansASharedDatabaseOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	old, newer := time.Now().Add(-time.Hour).Truncate(time.Millisecond), time.Now().Truncate(time.Millisecond)
	bad := tdoc("bad", "B", old)
	bad[1].Value = int32(7) // name must be a string
	shared, missing := storetest.DBName(t), storetest.DBName(t)+"x"
	a, _ := e.seedSpace(t, shared, tdoc("x", "old", old), tdoc("y", "Y", old), bad)
	c, _ := e.seedSpace(t, "", tdoc("x", "new", newer))
	b, _ := e.seedSpace(t, shared)
	f, _ := e.seedSpace(t, missing)
	g, _ := e.seedSpace(t, missing)
	noDB := `database "` + missing + `" does not exist or has no property_templates collection`

	for _, dry := range []bool{true, false} {
		var progress [][2]int
		rep, err := e.svc.Migrate(ctx, templates.MigrateOptions{DryRun: dry,
			Progress: func(d, n int) { progress = append(progress, [2]int{d, n}) }})
		if err != nil {
			t.Fatal(err)
		}
		rep.DurationMs = 0
		want := &templates.MigrationReport{DryRun: dry, SpacesScanned: 3, TemplatesFound: 4, UniqueTemplates: 2, Migrated: 2,
			Conflicts: []templates.Conflict{{ID: "x", Spaces: []string{a, c, b}, ChosenFrom: c}},
			Errors: []templates.SpaceError{{SpaceID: a, TemplateID: "bad", Message: "name must be a string"},
				{SpaceID: f, Message: noDB}, {SpaceID: g, Message: noDB}},
			SharedDatabases: []templates.SharedDatabase{{Database: shared, Spaces: []string{a, b}}, {Database: missing, Spaces: []string{f, g}}}}
		if d := cmp.Diff(want, rep); d != "" {
			t.Fatalf("dry run %v: report (-want +got):\n%s", dry, d)
		}
		if got, want := len(progress), 3; got != want || progress[len(progress)-1] != [2]int{3, 3} {
			t.Fatalf("dry run %v: progress=%v, want 3 calls ending at 3 of 3 databases", dry, progress)
		}
	}
	core := e.docs(t, e.core, "core_property_templates")
	if d := cmp.Diff([]string{"x", "y"}, slices.Sorted(maps.Keys(core))); d != "" {
		t.Fatalf("core holds (-want +got):\n%s", d)
	}
	if got := core["x"][0]["name"]; got != "new" {
		t.Fatalf("x in core is %q, want the newest version", got)
	}
}

// Ensure migrate, as cleanup, refuses a space whose database is the core or the application
// database: the space is listed in errors with cleanup's reason and its database is not
// scanned (a property_templates collection there is not migrated), and the rest goes on.
func TestService_MigrateRefusesCoreAndAppDatabases(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	now := time.Now().Truncate(time.Millisecond)
	e.seedSpace(t, "", tdoc("good", "G", now))
	coreSpace, _ := e.seedSpace(t, e.core, tdoc("in-core-db", "C", now))
	appSpace, _ := e.seedSpace(t, e.app, tdoc("in-app-db", "A", now))

	for _, dry := range []bool{true, false} {
		var progress [][2]int
		rep, err := e.svc.Migrate(ctx, templates.MigrateOptions{DryRun: dry,
			Progress: func(d, n int) { progress = append(progress, [2]int{d, n}) }})
		if err != nil {
			t.Fatal(err)
		}
		rep.DurationMs = 0
		want := &templates.MigrationReport{DryRun: dry, SpacesScanned: 1, TemplatesFound: 1, UniqueTemplates: 1, Migrated: 1,
			Conflicts: []templates.Conflict{}, SharedDatabases: []templates.SharedDatabase{},
			Errors: []templates.SpaceError{
				{SpaceID: coreSpace, Message: fmt.Sprintf("refusing to scan: the space's database %q is the core database", e.core)},
				{SpaceID: appSpace, Message: fmt.Sprintf("refusing to scan: the space's database %q is the application database", e.app)}}}
		if d := cmp.Diff(want, rep); d != "" {
			t.Fatalf("dry run %v: report (-want +got):\n%s", dry, d)
		}
		if got, want := progress, [][2]int{{1, 1}}; !slices.Equal(got, want) {
			t.Fatalf("dry run %v: progress=%v, want %v (the refused databases are not counted)", dry, got, want)
		}
	}
	if d := cmp.Diff([]string{"good"}, slices.Sorted(maps.Keys(e.docs(t, e.core, "core_property_templates")))); d != "" {
		t.Fatalf("core holds (-want +got):\n%s", d)
	}
	_, err := e.svc.Cleanup(ctx, templates.CleanupOptions{SpaceID: coreSpace})
	if got, want := fmt.Sprint(err), fmt.Sprintf("refusing to clean up: the space's database %q is the core database", e.core); kind(err) != apperr.Conflict || got != want {
		t.Fatalf("cleanup of the core database's space: %v, want Conflict %q", err, want)
	}
}
