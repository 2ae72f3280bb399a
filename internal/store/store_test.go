package store_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"

	"github.com/acme/app/internal/apperr"
	"github.com/acme/app/internal/store"
	"github.com/acme/app/internal/store/storetest"
)

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// Ensure the embedded store starts, answers a real insert/find through the driver, keeps its
// data across a restart on the same data_dir, refuses a second opener while it runs, and that
// RunningURI finds it only while it runs.
func TestEmbedded_Lifecycle(t *testing.T) {
	ctx := ctxT(t)
	dir := t.TempDir()
	if _, err := store.RunningURI(dir); !errors.Is(err, store.ErrNotRunning) {
		t.Fatalf("RunningURI before start = %v, want ErrNotRunning", err)
	}

	st, err := store.Open(ctx, store.Options{DataDir: dir})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	if got, err := store.RunningURI(dir); err != nil || got != st.URI() {
		t.Fatalf("RunningURI while running = %q, %v; want %q", got, err, st.URI())
	}
	if !st.Embedded() {
		t.Fatal("Embedded() = false, want true with no URI")
	}
	uri, err := os.ReadFile(store.URIFile(dir))
	if err != nil || !strings.HasPrefix(string(uri), "mongodb://127.0.0.1:") {
		t.Fatalf("uri file = %q, %v; want a loopback mongodb:// URI", uri, err)
	}
	coll := st.DB("lifecycle").Collection("things")
	if _, err := coll.InsertOne(ctx, bson.M{"_id": "a", "n": 42}); err != nil {
		t.Fatalf("insert: %v", err)
	}

	// A second exclusive opener is refused.
	if _, err := store.Open(ctx, store.Options{DataDir: dir}); !errors.Is(err, store.ErrLocked) {
		t.Fatalf("second open err = %v, want ErrLocked", err)
	}
	// A shared opener (an operator command) uses the running server through the URI file.
	cli, err := store.Open(ctx, store.Options{DataDir: dir, Shared: true})
	if err != nil {
		t.Fatalf("shared open: %v", err)
	}
	if cli.Embedded() {
		t.Fatal("shared opener started its own server")
	}
	var got bson.M
	if err := cli.DB("lifecycle").Collection("things").FindOne(ctx, bson.M{"_id": "a"}).Decode(&got); err != nil {
		t.Fatalf("shared find: %v", err)
	}
	_ = cli.Close(ctx)

	if err := st.Close(ctx); err != nil {
		t.Fatalf("close: %v", err)
	}
	if _, err := os.Stat(store.URIFile(dir)); !os.IsNotExist(err) {
		t.Fatalf("uri file still present after close (err=%v)", err)
	}
	if _, err := store.RunningURI(dir); !errors.Is(err, store.ErrNotRunning) {
		t.Fatalf("RunningURI after close = %v, want ErrNotRunning", err)
	}

	// Restart on the same directory: the data is still there.
	st2, err := store.Open(ctx, store.Options{DataDir: dir})
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer st2.Close(context.Background())
	got = nil
	if err := st2.DB("lifecycle").Collection("things").FindOne(ctx, bson.M{"_id": "a"}).Decode(&got); err != nil {
		t.Fatalf("find after restart: %v", err)
	}
	if n, _ := got["n"].(int32); n != 42 {
		t.Fatalf("after restart n = %v, want 42", got["n"])
	}
	if _, err := os.Stat(filepath.Join(dir, "db")); err != nil {
		t.Fatalf("db directory: %v", err)
	}
}

// Ensure RunningURI reads a URI file without creating anything, and takes an empty one
// (a server still starting) for none.
func TestRunningURI(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, file string // file: the URI file's content; "-": no file
		want       string
		wantErr    error
	}{
		{"NoFile", "-", "", store.ErrNotRunning},
		{"Empty", "\n", "", store.ErrNotRunning},
		{"URI", "mongodb://127.0.0.1:4242/\n", "mongodb://127.0.0.1:4242/", nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			if tt.file != "-" {
				if err := os.WriteFile(store.URIFile(dir), []byte(tt.file), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			got, err := store.RunningURI(dir)
			if got != tt.want || !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
				t.Fatalf("RunningURI = %q, %v; want %q, %v", got, err, tt.want, tt.wantErr)
			}
			entries, _ := os.ReadDir(dir)
			if want := map[bool]int{true: 0, false: 1}[tt.file == "-"]; len(entries) != want {
				t.Fatalf("the directory holds %d entries after RunningURI, want %d", len(entries), want)
			}
		})
	}
}

// Ensure a shared opener with no running server and no URI file starts its own store.
func TestEmbedded_SharedWithoutServerOpensItsOwn(t *testing.T) {
	ctx := ctxT(t)
	st, err := store.Open(ctx, store.Options{DataDir: t.TempDir(), Shared: true})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	defer st.Close(context.Background())
	if !st.Embedded() {
		t.Fatal("want an embedded server of its own")
	}
}

// Ensure storetest databases are isolated and usable in parallel.
func TestStoretest_DB(t *testing.T) {
	t.Parallel()
	a, b := storetest.DB(t), storetest.DB(t)
	if a.Name() == b.Name() {
		t.Fatalf("two DB() calls gave the same name %q", a.Name())
	}
	ctx := ctxT(t)
	if _, err := a.Collection("c").InsertOne(ctx, bson.M{"x": 1}); err != nil {
		t.Fatal(err)
	}
	n, err := b.Collection("c").CountDocuments(ctx, bson.M{})
	if err != nil || n != 0 {
		t.Fatalf("other database sees %d docs (err %v), want 0", n, err)
	}
}

// Ensure creating several indexes twice is a no-op, not a failure (FerretDB v1 panicked when
// one createIndexes named several existing indexes), and that the unique one exists after.
func TestEnsureIndexes_Idempotent(t *testing.T) {
	t.Parallel()
	coll := storetest.DB(t).Collection("c")
	models := []mongo.IndexModel{
		{Keys: bson.D{{Key: "a", Value: 1}}, Options: options.Index().SetUnique(true)},
		{Keys: bson.D{{Key: "b", Value: 1}, {Key: "c", Value: -1}}},
	}
	for i := 0; i < 2; i++ {
		if err := store.EnsureIndexes(ctxT(t), coll, models...); err != nil {
			t.Fatalf("run %d: %v", i+1, err)
		}
	}
	if names := indexNames(t, coll); !slices.Contains(names, "a_1") {
		t.Fatalf("indexes = %v, want a_1 among them", names)
	}
}

// Ensure that on the embedded store, which reads no index but _id's, EnsureIndexes creates the
// unique indexes (they still refuse duplicates) and no other, and drops a non-unique index of
// its models that an earlier version created.
func TestEnsureIndexes_EmbeddedKeepsOnlyUnique(t *testing.T) {
	ctx := ctxT(t)
	st, err := store.Open(ctx, store.Options{DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close(context.Background()) })
	coll := st.DB("idx").Collection("c")
	if _, err := coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "b", Value: 1}, {Key: "c", Value: -1}}}); err != nil {
		t.Fatal(err)
	}
	models := []mongo.IndexModel{
		{Keys: bson.D{{Key: "a", Value: 1}}, Options: options.Index().SetUnique(true)},
		{Keys: bson.D{{Key: "b", Value: 1}, {Key: "c", Value: -1}}},
		{Keys: bson.D{{Key: "d", Value: 1}}, Options: options.Index().SetName("by_d")},
	}
	for i := 0; i < 2; i++ {
		if err := store.EnsureIndexes(ctx, coll, models...); err != nil {
			t.Fatalf("run %d: %v", i+1, err)
		}
	}
	if got, want := indexNames(t, coll), []string{"_id_", "a_1"}; !slices.Equal(got, want) {
		t.Fatalf("indexes = %v, want %v", got, want)
	}
	if _, err := coll.InsertMany(ctx, []any{bson.D{{Key: "a", Value: 1}}, bson.D{{Key: "a", Value: 1}}}); !mongo.IsDuplicateKeyError(err) {
		t.Fatalf("a duplicate of the unique field: err = %v, want a duplicate key error", err)
	}
}

// indexNames returns the names of coll's indexes, sorted.
func indexNames(t *testing.T, coll *mongo.Collection) []string {
	t.Helper()
	specs, err := coll.Indexes().ListSpecifications(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, len(specs))
	for i, s := range specs {
		names[i] = s.Name
	}
	slices.Sort(names)
	return names
}

// Ensure an Open that fails names the URI without its password, whatever the password holds.
func TestOpen_ErrorHidesPassword(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ name, uri string }{
		{"Unreachable", "mongodb://u:hunter2@127.0.0.1:1/?serverSelectionTimeoutMS=200"},
		{"SpaceAndQuotes", `mongodb://u:hunter2 x'y"<z>@127.0.0.1:1/?serverSelectionTimeoutMS=200`},
		{"Unparsable", "mongodb://u:hunter2@127.0.0.1:notaport/"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := store.Open(ctxT(t), store.Options{URI: tt.uri, DataDir: t.TempDir()})
			if err == nil || strings.Contains(err.Error(), "hunter2") || !strings.Contains(err.Error(), "u:****@127.0.0.1:") {
				t.Fatalf("err = %v, want a failure that names the URI without its password", err)
			}
		})
	}
}

// Ensure a connection string the driver cannot parse is an Invalid error (a bad configuration
// value) that names the string without its password; an unreachable server is not Invalid.
func TestConnect_InvalidURI(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, uri   string
		wantInvalid bool
	}{
		{"ErrBadPort", "mongodb://ada:s3cret-pw@db.invalid:notaport/", true},
		{"ErrBadEscape", "mongodb://ada:s3cret-pw@%zz/", true},
		{"ErrBadOption", "mongodb://ada:s3cret-pw@127.0.0.1:1/?connectTimeoutMS=abc", true},
		{"OKUnreachable", "mongodb://127.0.0.1:1/?directConnection=true", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			client, err := store.Connect(context.Background(), tt.uri)
			if client != nil {
				_ = client.Disconnect(context.Background())
			}
			if got := err != nil && apperr.KindOf(err) == apperr.Invalid; got != tt.wantInvalid {
				t.Fatalf("err=%v, want Invalid: %v", err, tt.wantInvalid)
			}
			if err != nil && strings.Contains(err.Error(), "s3cret-pw") {
				t.Fatalf("the error shows the password: %v", err)
			}
		})
	}
}

// Ensure an opener whose context ends while it waits for a data directory another command
// holds says it was stopped waiting for the lock, naming the directory and its holder, and
// carries the context's cause (the signal that stopped it) rather than a bare "context
// canceled".
func TestEmbedded_WaitStopped(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	dir := t.TempDir()
	first, err := store.Open(ctx, store.Options{DataDir: dir, Shared: true})
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close(context.Background())

	cause := errors.New("interrupted by SIGTERM")
	waitCtx, cancel := context.WithCancelCause(ctx)
	time.AfterFunc(200*time.Millisecond, func() { cancel(cause) })
	_, err = store.Open(waitCtx, store.Options{DataDir: dir, Shared: true})
	if !errors.Is(err, cause) {
		t.Fatalf("open stopped while waiting = %v, want its context's cause", err)
	}
	want := "store: stopped while waiting for the lock on " + dir + ", held by process " + strconv.Itoa(os.Getpid()) + ": interrupted by SIGTERM"
	if got := err.Error(); got != want {
		t.Fatalf("message = %q, want %q", got, want)
	}
}

// Ensure operator commands that open one data directory at the same moment take turns: a
// command that owns the embedded store publishes no URI (no one may come to depend on a store
// that ends with the command), a second opener, shared or a server, waits for it instead of
// failing or connecting to a store about to go, and a wait that runs out is ErrLocked.
func TestEmbedded_CommandsTakeTurns(t *testing.T) {
	t.Parallel()
	for _, second := range []struct {
		name   string
		shared bool
	}{{"Command", true}, {"Server", false}} {
		t.Run(second.name, func(t *testing.T) {
			t.Parallel()
			ctx := ctxT(t)
			dir := t.TempDir()
			first, err := store.Open(ctx, store.Options{DataDir: dir, Shared: true})
			if err != nil {
				t.Fatal(err)
			}
			if !first.Embedded() {
				t.Fatal("the first command did not open the store itself")
			}
			if _, err := store.RunningURI(dir); !errors.Is(err, store.ErrNotRunning) {
				t.Fatalf("RunningURI while a command holds the store = %v, want ErrNotRunning", err)
			}
			if _, err := first.DB("turns").Collection("c").InsertOne(ctx, bson.M{"_id": "first"}); err != nil {
				t.Fatal(err)
			}

			if _, err := store.Open(ctx, store.Options{DataDir: dir, Shared: second.shared, LockWait: 200 * time.Millisecond}); !errors.Is(err, store.ErrLocked) {
				t.Fatalf("open past its wait = %v, want ErrLocked", err)
			}

			type opened struct {
				st  *store.Store
				err error
			}
			got := make(chan opened, 1)
			go func() {
				st, err := store.Open(ctx, store.Options{DataDir: dir, Shared: second.shared})
				got <- opened{st, err}
			}()
			select {
			case o := <-got:
				t.Fatalf("the second opener did not wait: %v, %v", o.st, o.err)
			case <-time.After(300 * time.Millisecond):
			}
			if err := first.Close(ctx); err != nil {
				t.Fatal(err)
			}
			o := <-got
			if o.err != nil {
				t.Fatalf("second open after the first closed: %v", o.err)
			}
			defer o.st.Close(context.Background())
			if !o.st.Embedded() {
				t.Fatal("the second opener did not open the store itself")
			}
			if n, err := o.st.DB("turns").Collection("c").CountDocuments(ctx, bson.M{"_id": "first"}); err != nil || n != 1 {
				t.Fatalf("the first command's write: %d, %v", n, err)
			}
			_, err = store.RunningURI(dir)
			if published := err == nil; published != !second.shared {
				t.Fatalf("URI published = %v (%v), want %v", published, err, !second.shared)
			}
		})
	}
}

// Ensure a store whose database file is damaged (not SQLite, or emptied) is refused with the
// file named: FerretDB's own error ("file is not a database (26)") names none of the files.
func TestEmbedded_DamagedFileNamed(t *testing.T) {
	for _, damage := range []struct {
		name    string
		content []byte
	}{
		{"garbage", []byte(strings.Repeat("not a database ", 600))},
		{"empty", nil},
	} {
		t.Run(damage.name, func(t *testing.T) {
			ctx := ctxT(t)
			dir := t.TempDir()
			st, err := store.Open(ctx, store.Options{DataDir: dir})
			if err != nil {
				t.Fatalf("open: %v", err)
			}
			for _, db := range []string{"alpha", "bravo"} {
				if _, err := st.DB(db).Collection("c").InsertOne(ctx, bson.M{"n": 1}); err != nil {
					t.Fatalf("insert: %v", err)
				}
			}
			if err := st.Close(context.Background()); err != nil {
				t.Fatalf("close: %v", err)
			}
			bad := filepath.Join(dir, "db", "bravo.sqlite")
			for _, f := range []string{bad + "-wal", bad + "-shm"} {
				_ = os.Remove(f)
			}
			if err := os.WriteFile(bad, damage.content, 0o600); err != nil {
				t.Fatal(err)
			}
			_, err = store.Open(ctx, store.Options{DataDir: dir})
			if err == nil || !strings.Contains(err.Error(), bad) || strings.Contains(err.Error(), "alpha.sqlite") {
				t.Fatalf("open of a store with a damaged %s: err = %v, want one that names it (and only it)", bad, err)
			}
		})
	}
}
