package cmd

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/bson"

	"github.com/acme/app/internal/apperr"
	"github.com/acme/app/internal/auth"
	"github.com/acme/app/internal/budget"
	"github.com/acme/app/internal/config"
	"github.com/acme/app/internal/dbcheck"
	"github.com/acme/app/internal/keys"
	"github.com/acme/app/internal/memlimit"
	"github.com/acme/app/internal/metrics"
	"github.com/acme/app/internal/store"
	"github.com/acme/app/internal/usage"
)

// runBuilding runs the program in-process like runApp and returns what it built, in order.
func runBuilding(t *testing.T, getenv func(string) string, args ...string) (result, []string) {
	t.Helper()
	var out, errOut bytes.Buffer
	var built []string
	f := &factory{in: strings.NewReader(""), out: &out, errOut: &errOut, getenv: getenv,
		onBuild: func(name string) { built = append(built, name) }}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	code := run(ctx, f, args)
	return result{code, out.String(), errOut.String()}, built
}

// storeIndexes opens the embedded store under dataDir (no serve may hold it) and returns the
// indexes of each collection of the app's database that has any besides _id_.
func storeIndexes(t *testing.T, dataDir string) map[string][]string {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, store.Options{DataDir: dataDir})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close(ctx)
	db := st.DB("backend")
	colls, err := db.ListCollectionNames(ctx, bson.D{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, c := range colls {
		cur, err := db.Collection(c).Indexes().List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var specs []struct {
			Name string `bson:"name"`
		}
		if err := cur.All(ctx, &specs); err != nil {
			t.Fatal(err)
		}
		for _, s := range specs {
			if s.Name != "_id_" {
				out[c] = append(out[c], s.Name)
			}
		}
	}
	return out
}

// Ensure each operator command builds only the services it uses, creates no index, never
// starts the usage recorder and never keeps budgets in memory; and that serve builds every
// service, with the recorder and budgets in memory, and creates the indexes.
func TestServicesBuiltPerCommand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	env := testEnv()
	r, built := runBuilding(t, env, "dev", "seed", "--data-dir", dir)
	if want := []string{builtStore, builtTokens, builtAuth, builtTemplates}; r.code != 0 || !slices.Equal(built, want) {
		t.Fatalf("dev seed = %d %q, built %q, want %q", r.code, r.errOut, built, want)
	}
	const unreachable = "mongodb://127.0.0.1:1/?serverSelectionTimeoutMS=300"
	usageReader := []string{builtStore, builtUsageReader}
	// Sequential: the commands share one data directory, which each opens in its turn.
	for _, tt := range []struct {
		args  []string
		code  int
		built []string
	}{
		{[]string{"users", "list"}, 0, []string{builtStore, builtTokens, builtAuth}},
		{[]string{"users", "grant", "user@example.com", "admin"}, 0, []string{builtStore, builtTokens, builtAuth}},
		{[]string{"users", "revoke", "user@example.com", "admin"}, 0, []string{builtStore, builtTokens, builtAuth}},
		{[]string{"users", "budget", "user@example.com", "5"}, 0,
			[]string{builtStore, builtTokens, builtAuth, builtUsageReader, builtBudgetStore}},
		{[]string{"keys", "create", "--user", "user@example.com", "--name", "ci"}, 0,
			[]string{builtStore, builtTokens, builtAuth, builtKeys}},
		{[]string{"keys", "list"}, 0, []string{builtStore, builtKeys}},
		{[]string{"keys", "revoke", "nope"}, exitFailure, []string{builtStore, builtKeys}},
		{[]string{"usage", "report"}, 0, usageReader},
		{[]string{"usage", "report", "--user", "user@example.com"}, 0,
			[]string{builtStore, builtTokens, builtAuth, builtUsageReader}},
		{[]string{"usage", "reconcile", "--days", "2"}, 0, usageReader},
		{[]string{"templates", "list"}, 0, []string{builtStore, builtTemplates}},
		{[]string{"templates", "migrate"}, 0, []string{builtStore, builtTemplates}},
		{[]string{"mongo", "test", "--uri", unreachable}, exitFailure, nil},
		{[]string{"mongo", "query", "--uri", unreachable, "--collection", "users"}, exitFailure, nil},
		{[]string{"usage", "report", "--days", "0"}, exitUsage, nil},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			r, built := runBuilding(t, env, append(tt.args, "--data-dir", dir)...)
			if r.code != tt.code || !slices.Equal(built, tt.built) {
				t.Fatalf("exit %d (want %d), built %q, want %q\nstdout: %s\nstderr: %s", r.code, tt.code, built, tt.built, r.out, r.errOut)
			}
		})
	}
	if idx := storeIndexes(t, dir); len(idx) > 0 {
		t.Fatalf("operator commands created indexes: %v", idx)
	}

	var mu sync.Mutex
	var serveBuilt []string
	s := startServeWith(t, dir, env, func(f *factory) {
		f.onBuild = func(name string) { mu.Lock(); serveBuilt = append(serveBuilt, name); mu.Unlock() }
	})
	if code := s.stop(t); code != 0 {
		t.Fatalf("serve exit %d: %s", code, s.logs.String())
	}
	want := []string{builtPrices, builtStore, builtTokens, builtAuth, builtTemplates, builtDBCheck, builtKeys, builtMetrics,
		builtUsageRecorder, builtBudgetMemory, builtAI, builtGateway}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(serveBuilt, want) {
		t.Fatalf("serve built %q, want %q", serveBuilt, want)
	}
	idx := storeIndexes(t, dir)
	// The unique indexes; the embedded store gets no other (it reads no index but _id's).
	for coll, name := range map[string]string{auth.UsersCollection: "email_1", keys.Collection: "digest_1",
		budget.Collection: "userId_1"} {
		if !slices.Contains(idx[coll], name) {
			t.Errorf("after serve, %s has indexes %q, want %s among them", coll, idx[coll], name)
		}
	}
	for _, coll := range []string{usage.DailyCollection, usage.RequestsCollection} {
		if len(idx[coll]) > 0 {
			t.Errorf("after serve on the embedded store, %s has indexes %q, want none but _id_", coll, idx[coll])
		}
	}
}

// Ensure the API's MongoDB utilities get dbcheck.max_concurrent and report their refusals in
// app_dbcheck_refusals_total, whichever of the two serve builds first: with a bound of 1 and one
// test held by a server that never answers, a second test is refused at once as overloaded and
// counted.
func TestServicesDBCheckBoundAndMetric(t *testing.T) {
	t.Parallel()
	for _, metricsFirst := range []bool{false, true} {
		t.Run(map[bool]string{false: "DBCheckFirst", true: "MetricsFirst"}[metricsFirst], func(t *testing.T) {
			t.Parallel()
			// A server that accepts connections and never answers: a test against it holds its
			// slot until the connection closes.
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			accepted := make(chan net.Conn, 8)
			go func() {
				for {
					c, err := ln.Accept()
					if err != nil {
						return
					}
					accepted <- c
				}
			}()

			cfg, err := config.Load(nil, testEnv("APP_DBCHECK_MAX_CONCURRENT", "1", "APP_DBCHECK_ALLOWED_HOSTS", "127.0.0.1",
				"APP_DBCHECK_TIMEOUT", "10s"))
			if err != nil {
				t.Fatal(err)
			}
			s := &services{f: &factory{cfg: cfg, log: slog.New(slog.DiscardHandler)}, server: true}
			defer s.close()
			var m *metrics.Metrics
			if metricsFirst {
				m = s.Metrics()
			}
			d, err := s.DBCheck()
			if err != nil {
				t.Fatal(err)
			}
			if !metricsFirst {
				m = s.Metrics()
			}

			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			in := dbcheck.TestInput{ConnectionString: "mongodb://" + ln.Addr().String() + "/?directConnection=true", Database: "db"}
			heldCtx, release := context.WithCancel(ctx)
			defer release()
			held := make(chan error, 1)
			go func() { _, err := d.Test(heldCtx, in); held <- err }()
			var conn net.Conn
			select {
			case conn = <-accepted: // the first test holds the one slot
			case err := <-held:
				t.Fatalf("the first test ended before it reached the server: %v", err)
			case <-ctx.Done():
				t.Fatal("the first test never reached the server")
			}
			_, err = d.Test(ctx, in)
			if e := apperr.As(err); apperr.KindOf(err) != apperr.Unavailable || e == nil || e.Code != memlimit.Overloaded ||
				!strings.Contains(err.Error(), "dbcheck.max_concurrent=1") {
				t.Fatalf("a second test at dbcheck.max_concurrent=1: err = %v, want Unavailable, overloaded, naming the bound", err)
			}
			if got, want := counterValue(t, m, "app_dbcheck_refusals_total"), 1.0; got != want {
				t.Fatalf("app_dbcheck_refusals_total = %v, want %v", got, want)
			}
			release()
			<-held
			_ = conn.Close()
			for len(accepted) > 0 {
				_ = (<-accepted).Close()
			}
		})
	}
}

// counterValue returns the value of the counter named name among m's metrics (0 if absent).
func counterValue(t *testing.T, m *metrics.Metrics, name string) float64 {
	t.Helper()
	mfs, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			var v float64
			for _, s := range mf.GetMetric() {
				v += s.GetCounter().GetValue()
			}
			return v
		}
	}
	return 0
}
