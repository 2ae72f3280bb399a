package cmd

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/bson"

	"github.com/acme/app/internal/ai/aitest"
	"github.com/acme/app/internal/store"
	"github.com/acme/app/internal/usage"
)

// Ensure a shutdown under load loses no record: every request that reached the provider is
// in ai_requests after serve returns, the rollup agrees with the log, and `usage report`
// (alone on the data directory) reports the same totals.
func TestServe_ShutdownUnderLoadLosesNoRecord(t *testing.T) {
	// From the load-th call on, the provider holds its answers until the shutdown has begun,
	// so that requests are in flight when it starts.
	const load = 100
	var received atomic.Int64
	loaded, shuttingDown := make(chan struct{}), make(chan struct{})
	var releaseOnce sync.Once
	release := func() { releaseOnce.Do(func() { close(shuttingDown) }) }
	fake := aitest.New(t, "openai", func(w http.ResponseWriter, r *http.Request, c aitest.Call) {
		if n := received.Add(1); n >= load {
			if n == load {
				close(loaded)
			}
			<-shuttingDown
		}
		aitest.OK("")(w, r, c)
	})
	t.Cleanup(release) // before the fake closes, which waits for the calls it holds
	dir := t.TempDir()
	env := testEnv("APP_AI_OPENAI_API_KEY", "sk-test", "APP_AI_OPENAI_BASE_URL", fake.BaseURL(), "APP_RATELIMIT_LIMIT", "1000000")
	s := startServe(t, dir, env)
	resp, err := http.Post("http://"+s.addr+"/api/auth/register", "application/json",
		strings.NewReader(`{"email":"load@example.com","password":"secret1","name":"Load"}`))
	if err != nil || resp.StatusCode != 201 {
		t.Fatalf("register: %v %v", resp, err)
	}
	var reg struct {
		AccessToken string `json:"accessToken"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&reg)
	resp.Body.Close()

	var answered atomic.Int64
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			client := &http.Client{Timeout: 30 * time.Second}
			for {
				select {
				case <-stop:
					return
				default:
				}
				req, _ := http.NewRequest("POST", "http://"+s.addr+"/api/ai/openai/chat",
					strings.NewReader(`{"messages":[{"role":"user","content":"hi there"}]}`))
				req.Header.Set("Authorization", "Bearer "+reg.AccessToken)
				req.Header.Set("Content-Type", "application/json")
				resp, err := client.Do(req)
				if err != nil {
					return // the server has stopped accepting
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode == 200 {
					answered.Add(1)
				}
			}
		}()
	}
	select {
	case <-loaded:
	case <-time.After(30 * time.Second):
		close(stop)
		t.Fatalf("the provider received %d calls in 30s; %d answered 200", len(fake.Calls()), answered.Load())
	}
	// Watched from before the stop: a waiter registered later could miss the line, and the
	// held calls would then keep serve in its grace period past the test's patience.
	shutting := s.logs.logged("shutting down")
	go func() {
		<-shutting
		release()
	}()
	if code := s.stop(t); code != 0 { // SIGTERM's path: cancel, Shutdown, close services
		t.Fatalf("serve exit %d: %s", code, s.logs.String())
	}
	close(stop)
	wg.Wait()

	st, err := store.Open(context.Background(), store.Options{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	n, err := st.DB("backend").Collection(usage.RequestsCollection).CountDocuments(context.Background(), bson.D{})
	_ = st.Close(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	calls := int64(len(fake.Calls()))
	if n != calls || n < answered.Load() {
		t.Fatalf("ai_requests holds %d records; the provider received %d calls and %d were answered 200", n, calls, answered.Load())
	}

	r := runApp(t, env, "usage", "report", "--json", "--user", "load@example.com", "--data-dir", dir)
	var rep usage.Report
	if r.code != 0 || json.Unmarshal([]byte(r.out), &rep) != nil {
		t.Fatalf("usage report = %d %q %q", r.code, r.out, r.errOut)
	}
	if rep.Totals.TotalRequests != n || len(rep.Rows) != 1 || rep.Rows[0].Provider != "openai" || rep.Totals.TotalTokens != 18*n {
		t.Fatalf("report %+v, want %d requests of 18 tokens", rep, n)
	}
	r = runApp(t, env, "usage", "report", "--days", "7", "--data-dir", dir)
	if r.code != 0 || !strings.Contains(r.out, "TOTAL") || !strings.Contains(r.out, "gpt-6-luna") {
		t.Fatalf("usage report table = %d %q %q", r.code, r.out, r.errOut)
	}
}

// Ensure the report's flags parse, and bad ones exit 2 without opening anything.
func TestUsageReportFlags(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		args     []string
		wantCode int
		want     usageReportOptions
	}{
		{"Defaults", nil, 0, usageReportOptions{days: 30}},
		{"All", []string{"--days", "7", "--user", "a@b.c", "--json"}, 0, usageReportOptions{days: 7, user: "a@b.c", json: true}},
		{"DaysZero", []string{"--days", "0"}, exitUsage, usageReportOptions{}},
		{"DaysTooMany", []string{"--days", "367"}, exitUsage, usageReportOptions{}},
		{"DaysNotNumber", []string{"--days", "x"}, exitUsage, usageReportOptions{}},
		{"ExtraArg", []string{"extra"}, exitUsage, usageReportOptions{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var got *usageReportOptions
			f := &factory{in: strings.NewReader(""), out: io.Discard, errOut: io.Discard, getenv: testEnv()}
			root := newRootCmd(f)
			for _, c := range root.Commands() {
				if c.Name() == "usage" {
					root.RemoveCommand(c)
				}
			}
			uc := newUsageCmd(f)
			for _, c := range uc.Commands() {
				if c.Name() == "report" {
					uc.RemoveCommand(c)
				}
			}
			uc.AddCommand(newUsageReportCmd(f, func(_ context.Context, o *usageReportOptions) error { got = o; return nil }))
			root.AddCommand(uc)
			conventions(uc)
			root.SetArgs(append([]string{"usage", "report"}, tt.args...))
			root.SetOut(io.Discard)
			root.SetErr(io.Discard)
			err := root.ExecuteContext(context.Background())
			code := exitCode(err)
			if tt.wantCode != 0 {
				if code != tt.wantCode {
					t.Fatalf("exit %d, want %d", code, tt.wantCode)
				}
				return
			}
			if code != 0 || got == nil || *got != tt.want {
				t.Fatalf("exit %d, opts %+v, want %+v", code, got, tt.want)
			}
		})
	}
}

// Ensure `app serve` pointed at the embedded store another serve owns refuses to start with
// one line saying replicas need MongoDB, while an operator command (usage reconcile) on the
// same URI runs.
func TestServe_ReplicaOnEmbeddedStoreRefused(t *testing.T) {
	dir := t.TempDir()
	startServe(t, dir, testEnv())
	uri, err := os.ReadFile(store.URIFile(dir))
	if err != nil {
		t.Fatal(err)
	}
	u := strings.TrimSpace(string(uri))
	r := runApp(t, testEnv(), "serve", "--addr", "127.0.0.1:0", "--data-dir", t.TempDir(), "--mongodb-uri", u)
	lines := strings.Split(strings.TrimSpace(r.errOut), "\n")
	if r.code != exitFailure || !strings.Contains(r.errOut, "replicas need MongoDB") || len(lines) != 1 {
		t.Fatalf("replica serve = %d %q, want exit 1 and one line saying replicas need MongoDB", r.code, r.errOut)
	}
	r = runApp(t, testEnv(), "usage", "reconcile", "--days", "2", "--mongodb-uri", u, "--data-dir", dir)
	if r.code != 0 || !strings.Contains(r.out, "rewritten") {
		t.Fatalf("usage reconcile beside serve = %d %q %q", r.code, r.out, r.errOut)
	}
	if r := runApp(t, testEnv(), "usage", "reconcile", "--days", "0", "--data-dir", dir); r.code != exitUsage {
		t.Fatalf("--days 0: exit %d, want %d", r.code, exitUsage)
	}
}
