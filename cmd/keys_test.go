package cmd

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/acme/app/internal/ai/aitest"
)

// Ensure `keys` and `users budget` work beside a running serve on the same data directory:
// a key made by the CLI is accepted on /v1, listed without its secret, revoked; a budget set
// by the CLI refuses the next call at once and --clear lifts it; bad usage exits 2.
func TestKeysAndBudgetCLI(t *testing.T) {
	fake := aitest.New(t, "openai")
	dir := t.TempDir()
	env := testEnv("APP_AI_OPENAI_API_KEY", "sk-test", "APP_AI_OPENAI_BASE_URL", fake.BaseURL())
	s := startServe(t, dir, env)
	defer s.stop(t)
	resp, err := http.Post("http://"+s.addr+"/api/auth/register", "application/json",
		strings.NewReader(`{"email":"dev@example.com","password":"secret1","name":"Dev"}`))
	if err != nil || resp.StatusCode != 201 {
		t.Fatalf("register: %v %v", resp, err)
	}
	resp.Body.Close()

	r := runApp(t, env, "keys", "create", "--user", "dev@example.com", "--name", "cli", "--expires-days", "7", "--json", "--data-dir", dir)
	var created struct{ ID, Key string }
	if r.code != 0 || json.Unmarshal([]byte(r.out), &created) != nil || !strings.HasPrefix(created.Key, "sk-app-") {
		t.Fatalf("keys create = %d %q %q", r.code, r.out, r.errOut)
	}
	chat := func(path, body string) int {
		req, _ := http.NewRequest("POST", "http://"+s.addr+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+created.Key)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	v1 := `{"model":"openai/gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}`
	if code := chat("/v1/chat/completions", v1); code != 200 {
		t.Fatalf("/v1 with the CLI's key = %d", code)
	}
	r = runApp(t, env, "keys", "list", "--user", "dev@example.com", "--data-dir", dir)
	if r.code != 0 || !strings.Contains(r.out, created.ID) || strings.Contains(r.out, created.Key[10:]) {
		t.Fatalf("keys list = %d %q", r.code, r.out)
	}

	r = runApp(t, env, "users", "budget", "dev@example.com", "0.000001", "--data-dir", dir)
	if r.code != 0 || !strings.Contains(r.out, "$0.000001") {
		t.Fatalf("users budget = %d %q %q", r.code, r.out, r.errOut)
	}
	if code := chat("/api/ai/openai/chat", `{"messages":[{"role":"user","content":"hi"}],"model":"gpt-4o-mini"}`); code != 402 {
		t.Fatalf("call over budget = %d, want 402", code)
	}
	if code := chat("/v1/chat/completions", v1); code != 429 {
		t.Fatalf("/v1 call over budget = %d, want 429", code)
	}
	if r = runApp(t, env, "users", "budget", "dev@example.com", "--clear", "--data-dir", dir); r.code != 0 || !strings.Contains(r.out, "none") {
		t.Fatalf("users budget --clear = %d %q %q", r.code, r.out, r.errOut)
	}
	if code := chat("/v1/chat/completions", v1); code != 200 {
		t.Fatalf("call after --clear = %d", code)
	}

	if r = runApp(t, env, "keys", "revoke", created.ID, "--data-dir", dir); r.code != 0 {
		t.Fatalf("keys revoke = %d %q", r.code, r.errOut)
	}
	if r = runApp(t, env, "keys", "list", "--json", "--data-dir", dir); r.code != 0 || strings.Contains(r.out, created.ID) {
		t.Fatalf("revoked key listed: %q", r.out)
	}
	if r = runApp(t, env, "keys", "revoke", created.ID, "--data-dir", dir); r.code != exitFailure {
		t.Fatalf("second revoke = %d, want 1", r.code)
	}
	for _, args := range [][]string{
		{"keys", "create", "--name", "x"},
		{"keys", "create", "--user", "dev@example.com"},
		{"keys", "revoke"},
		{"users", "budget", "dev@example.com"},
		{"users", "budget", "dev@example.com", "lots"},
		{"users", "budget", "dev@example.com", "5", "--clear"},
	} {
		if r := runApp(t, env, append(args, "--data-dir", dir)...); r.code != exitUsage {
			t.Errorf("%v = %d %q, want exit 2", args, r.code, r.errOut)
		}
	}
	if r := runApp(t, env, "keys", "create", "--user", "ghost@example.com", "--name", "x", "--data-dir", dir); r.code != exitFailure {
		t.Errorf("unknown user = %d, want 1", r.code)
	}
}
