package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/bson"

	"github.com/acme/app/internal/auth"
	"github.com/acme/app/internal/config"
	"github.com/acme/app/internal/dbcheck"
	"github.com/acme/app/internal/keys"
	"github.com/acme/app/internal/store/storetest"
)

// runMongoApp is runApp with the environment given as a map.
func runMongoApp(t *testing.T, env map[string]string, args ...string) (int, string, string) {
	t.Helper()
	r := runApp(t, func(k string) string { return env[k] }, args...)
	return r.code, r.out, r.errOut
}

// Ensure flags build the options the run functions get.
func TestNewMongoCmds_Flags(t *testing.T) {
	t.Parallel()
	f := &factory{}
	var gotTest *mongoTestOptions
	c := newMongoTestCmd(f, func(_ context.Context, o *mongoTestOptions) error { gotTest = o; return nil })
	c.SetArgs([]string{"--uri", "mongodb://h", "--database", "d", "--json"})
	if err := c.Execute(); err != nil {
		t.Fatal(err)
	}
	if gotTest.URI != "mongodb://h" || gotTest.Database != "d" || !gotTest.JSON {
		t.Fatalf("test opts = %+v", gotTest)
	}

	cases := []struct {
		name      string
		args      []string
		wantLimit *int
		wantErr   bool
	}{
		{"Defaults", []string{"--collection", "c"}, nil, false},
		{"Limit", []string{"--collection", "c", "--limit", "0", "--filter", `{"a":1}`}, new(int), false},
		{"NoCollection", []string{"--limit", "5"}, nil, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got *mongoQueryOptions
			c := newMongoQueryCmd(f, func(_ context.Context, o *mongoQueryOptions) error { got = o; return nil })
			c.SetArgs(tc.args)
			c.SetOut(&bytes.Buffer{})
			c.SetErr(&bytes.Buffer{})
			err := c.Execute()
			if tc.wantErr {
				if err == nil {
					t.Fatal("err = nil, want a missing-flag error")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if (got.Limit == nil) != (tc.wantLimit == nil) || (got.Limit != nil && *got.Limit != *tc.wantLimit) {
				t.Fatalf("limit = %v, want %v", got.Limit, tc.wantLimit)
			}
			if got.Collection != "c" {
				t.Fatalf("collection = %q", got.Collection)
			}
		})
	}
}

// Ensure `mongo test` and `mongo query` exit 0/1/2 as documented, print the HTTP shape with
// --json, and explain a failure in one line on stderr.
func TestMongoCommands(t *testing.T) {
	t.Parallel()
	db := storetest.DB(t)
	if _, err := db.Collection("items").InsertMany(context.Background(), []any{bson.M{"n": 1}, bson.M{"n": 2}, bson.M{"n": 3}}); err != nil {
		t.Fatal(err)
	}
	uri := storetest.Store(t).URI()
	const unreachable = "mongodb://u:pw-secret-9@127.0.0.1:1/?serverSelectionTimeoutMS=300"
	env := map[string]string{"APP_LOG_LEVEL": "warn"}

	cases := []struct {
		name     string
		args     []string
		wantCode int
		check    func(t *testing.T, stdout, stderr string)
	}{
		{"TestJSON", []string{"mongo", "test", "--uri", uri, "--database", db.Name(), "--json"}, 0, func(t *testing.T, out, _ string) {
			var res map[string]any
			if err := json.Unmarshal([]byte(out), &res); err != nil {
				t.Fatalf("stdout is not JSON: %v\n%s", err, out)
			}
			if res["success"] != true || res["version"] == "" {
				t.Fatalf("result = %v", res)
			}
			for _, k := range []string{"clusterName", "latency", "databases"} {
				if _, ok := res[k]; !ok {
					t.Fatalf("result lacks %s: %v", k, res)
				}
			}
		}},
		{"TestCard", []string{"mongo", "test", "--uri", uri, "--database", db.Name()}, 0, func(t *testing.T, out, _ string) {
			if !strings.Contains(out, "Version:") || !strings.Contains(out, db.Name()) {
				t.Fatalf("card = %s", out)
			}
		}},
		{"TestUnreachable", []string{"mongo", "test", "--uri", unreachable}, 1, func(t *testing.T, out, errOut string) {
			if lines := strings.Split(strings.TrimSpace(errOut), "\n"); len(lines) != 1 || !strings.Contains(errOut, "127.0.0.1:1") {
				t.Fatalf("stderr = %q, want one line naming the server", errOut)
			}
		}},
		{"TestUnreachableJSON", []string{"mongo", "test", "--uri", unreachable, "--json"}, 1, func(t *testing.T, out, _ string) {
			var res map[string]any
			if err := json.Unmarshal([]byte(out), &res); err != nil || res["success"] != false || res["error"] == "" {
				t.Fatalf("stdout = %s, want the success:false JSON", out)
			}
		}},
		{"TestBadURI", []string{"mongo", "test", "--uri", "http://x"}, 2, nil},
		{"QueryJSON", []string{"mongo", "query", "--uri", uri, "--database", db.Name(), "--collection", "items", "--filter", `{"n": {"$gte": 2}}`, "--json"}, 0, func(t *testing.T, out, _ string) {
			var res struct {
				Success   bool             `json:"success"`
				Count     int              `json:"count"`
				Documents []map[string]any `json:"documents"`
			}
			if err := json.Unmarshal([]byte(out), &res); err != nil {
				t.Fatalf("stdout is not JSON: %v\n%s", err, out)
			}
			if !res.Success || res.Count != 2 || len(res.Documents) != 2 {
				t.Fatalf("result = %+v", res)
			}
			if _, ok := res.Documents[0]["_id"].(string); !ok {
				t.Fatalf("_id is not a string: %v", res.Documents[0])
			}
		}},
		{"QueryHuman", []string{"mongo", "query", "--uri", uri, "--database", db.Name(), "--collection", "items", "--limit", "1"}, 0, func(t *testing.T, out, _ string) {
			if !strings.Contains(out, `"n": 1`) || !strings.Contains(out, "1 document(s)") {
				t.Fatalf("stdout = %s", out)
			}
		}},
		{"QueryLimitZero", []string{"mongo", "query", "--uri", uri, "--collection", "items", "--limit", "0"}, 2, func(t *testing.T, _, errOut string) {
			if !strings.Contains(errOut, "limit must not be less than 1") {
				t.Fatalf("stderr = %q", errOut)
			}
		}},
		{"QueryWhere", []string{"mongo", "query", "--uri", uri, "--collection", "items", "--filter", `{"$where": "1"}`}, 2, func(t *testing.T, _, errOut string) {
			if !strings.Contains(errOut, "$where") {
				t.Fatalf("stderr = %q", errOut)
			}
		}},
		{"QueryNoCollection", []string{"mongo", "query", "--uri", uri}, 2, nil},
		{"QueryTwoFilters", []string{"mongo", "query", "--uri", uri, "--collection", "items", "--filter", `{} {"n": 9}`}, 2, func(t *testing.T, out, errOut string) {
			if out != "" || !strings.Contains(errOut, "filter must be valid MongoDB Extended JSON") {
				t.Fatalf("stdout = %q, stderr = %q", out, errOut)
			}
		}},
		{"QueryTrailingText", []string{"mongo", "query", "--uri", uri, "--collection", "items", "--filter", `{"n": 1}, garbage !!`}, 2, func(t *testing.T, out, errOut string) {
			if out != "" || !strings.Contains(errOut, "filter must be valid MongoDB Extended JSON") {
				t.Fatalf("stdout = %q, stderr = %q", out, errOut)
			}
		}},
		{"QueryStringFilter", []string{"mongo", "query", "--uri", uri, "--collection", "items", "--filter", `"str"`}, 2, func(t *testing.T, _, errOut string) {
			if !strings.Contains(errOut, "filter must be an object") || strings.Contains(errOut, "primitive") {
				t.Fatalf("stderr = %q", errOut)
			}
		}},

		{"QueryUnreachable", []string{"mongo", "query", "--uri", unreachable, "--collection", "c"}, 1, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runMongoApp(t, env, tc.args...)
			if code != tc.wantCode {
				t.Fatalf("exit = %d, want %d\nstdout: %s\nstderr: %s", code, tc.wantCode, out, errOut)
			}
			for _, marker := range []string{"goroutine ", "panic:", "pw-secret-9"} {
				if strings.Contains(out+errOut, marker) {
					t.Fatalf("output shows %q:\n%s%s", marker, out, errOut)
				}
			}
			if tc.wantCode != 0 && strings.Count(strings.TrimSpace(errOut), "\n") > 0 {
				t.Fatalf("stderr has more than one line: %q", errOut)
			}
			if tc.check != nil {
				tc.check(t, out, errOut)
			}
		})
	}
	// A result that cannot be written is a failure, card or JSON.
	for _, args := range [][]string{
		{"mongo", "test", "--uri", uri, "--database", db.Name()},
		{"mongo", "test", "--uri", uri, "--database", db.Name(), "--json"},
		{"mongo", "query", "--uri", uri, "--database", db.Name(), "--collection", "items"},
	} {
		var errOut bytes.Buffer
		code := Run(t.Context(), args, func(k string) string { return env[k] }, strings.NewReader(""), failingWriter{}, &errOut)
		if code != exitFailure || !strings.Contains(errOut.String(), "no space left on device") {
			t.Errorf("%v to a full disk: exit %d %q, want 1 saying so", args, code, errOut.String())
		}
	}
}

// Ensure without --uri the commands reach the app's own database as a client, never opening
// it: mongodb.uri, else the embedded store of a running serve on --data-dir; with neither,
// they fail in one line and create nothing (no data directory, lock or URI file).
func TestMongoCommands_OwnDatabase(t *testing.T) {
	t.Parallel()
	served := t.TempDir()
	startServe(t, served, testEnv())
	external := storetest.Store(t).URI()
	env := map[string]string{"APP_LOG_LEVEL": "warn"}
	for _, tt := range []struct {
		name     string
		args     []string // --data-dir is added: a directory that does not exist unless told
		served   bool     // --data-dir is the served one
		wantCode int
		wantOut  string // in stdout
		wantErr  string // in stderr
	}{
		{"TestServed", []string{"mongo", "test", "--json"}, true, 0, `"success": true`, ""},
		{"QueryServed", []string{"mongo", "query", "--collection", "users", "--json"}, true, 0, `"success": true`, ""},
		{"TestMongoDBURI", []string{"mongo", "test", "--json", "--mongodb-uri", external}, false, 0, `"success": true`, ""},
		{"TestNothingRunning", []string{"mongo", "test"}, false, exitFailure, "", "start `app serve` on it, or give --uri"},
		{"QueryNothingRunning", []string{"mongo", "query", "--collection", "users"}, false, exitFailure, "", "start `app serve` on it, or give --uri"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(t.TempDir(), "data")
			if tt.served {
				dir = served
			}
			code, out, errOut := runMongoApp(t, env, append(tt.args, "--data-dir", dir)...)
			if code != tt.wantCode || !strings.Contains(out, tt.wantOut) || !strings.Contains(errOut, tt.wantErr) {
				t.Fatalf("exit %d (want %d)\nstdout: %s\nstderr: %s", code, tt.wantCode, out, errOut)
			}
			if tt.wantCode != 0 && strings.Count(strings.TrimSpace(errOut), "\n") > 0 {
				t.Fatalf("stderr has more than one line: %q", errOut)
			}
			if _, err := os.Stat(dir); !tt.served && !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("the command created the data directory %s (stat: %v)", dir, err)
			}
		})
	}
}

// Ensure --help lists the mongo group.
func TestMongoHelp(t *testing.T) {
	t.Parallel()
	code, out, _ := runMongoApp(t, nil, "--help")
	if code != 0 || !strings.Contains(out, "  mongo ") {
		t.Fatalf("--help (exit %d) does not list mongo:\n%s", code, out)
	}
}

// Ensure the API's query service never answers the app's own secrets (a user's password hash,
// an API key's digest), as the services store them, while the operator's CLI reads them.
func TestDBCheckOptions_OwnSecrets(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := storetest.DB(t)
	users, err := auth.New(ctx, db, auth.NewTokens([]byte("secret-secret-secret-secret-secret"), time.Hour), 4)
	if err != nil {
		t.Fatal(err)
	}
	u, err := users.Register(ctx, auth.RegisterInput{Email: "ada@example.com", Password: "secret1", Name: "Ada"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := keys.New(db, keys.Options{}).Create(ctx, u.User.ID, u.User.Email, keys.CreateInput{Name: "ci"}); err != nil {
		t.Fatal(err)
	}
	cfg := &config.Config{}
	cfg.MongoDB.Database = db.Name()
	cfg.DBCheck.AllowedHosts = []string{"127.0.0.1"}
	for _, tc := range []struct {
		coll, secret string
	}{{auth.UsersCollection, `"password"`}, {keys.Collection, `"digest"`}} {
		for _, unrestricted := range []bool{false, true} {
			svc, err := dbcheck.New(dbcheckOptions(cfg, nil, unrestricted))
			if err != nil {
				t.Fatal(err)
			}
			res, err := svc.Query(ctx, dbcheck.QueryInput{ConnectionString: storetest.Store(t).URI(), Database: db.Name(), Collection: tc.coll})
			_ = svc.Close(ctx)
			if err != nil || res.Count != 1 {
				t.Fatalf("%s (unrestricted %v): %+v, %v", tc.coll, unrestricted, res, err)
			}
			if got := strings.Contains(string(res.Documents[0]), tc.secret); got != unrestricted {
				t.Errorf("%s (unrestricted %v): document %s holds %s: %v", tc.coll, unrestricted, res.Documents[0], tc.secret, got)
			}
		}
	}
}
