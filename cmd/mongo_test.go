package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/bson"

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
}

// Ensure without --uri the commands use the app's own database (here: the embedded store they
// open under --data-dir) and that --help lists the mongo group. Not parallel: FerretDB's
// New writes a package variable, so two embedded stores must not start at the same time.
func TestMongoTest_OwnDatabase(t *testing.T) {
	dir := t.TempDir()
	code, out, errOut := runMongoApp(t, map[string]string{"APP_LOG_LEVEL": "warn"}, "mongo", "test", "--data-dir", dir, "--json")
	if code != 0 {
		t.Fatalf("exit = %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	if !strings.Contains(out, `"success": true`) {
		t.Fatalf("stdout = %s", out)
	}
	code, out, _ = runMongoApp(t, nil, "--help")
	if code != 0 || !strings.Contains(out, "  mongo ") {
		t.Fatalf("--help (exit %d) does not list mongo:\n%s", code, out)
	}
}
