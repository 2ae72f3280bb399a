package cmd

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/acme/app/internal/ai/aitest"
)

// Ensure a call that fails after the provider reported usage is charged to the budget (the
// provider bills those tokens) and stays charged after a restart: the in-memory budgets of the
// embedded store start from the same billed costs they counted, not from answered calls only.
func TestServe_FailedCallsStayChargedAfterRestart(t *testing.T) {
	t.Parallel()
	fake := aitest.New(t, "anthropic", aitest.Events(
		`message_start|{"type":"message_start","message":{"id":"m","usage":{"input_tokens":100000,"output_tokens":1}}}`,
		`error|{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`))
	env := testEnv("APP_AI_ANTHROPIC_API_KEY", "k", "APP_AI_ANTHROPIC_BASE_URL", fake.BaseURL(),
		"APP_AI_DEFAULT_MONTHLY_BUDGET", "100")
	dir := t.TempDir()
	s := startServe(t, dir, env)
	base := "http://" + s.addr
	code, reg := call(t, "POST", base+"/api/auth/register", "", map[string]string{"email": "billed@example.com", "password": "secret12", "name": "Billed"})
	if code != 201 {
		t.Fatalf("register: %d %v", code, reg)
	}
	token, _ := reg["accessToken"].(string)

	req, _ := http.NewRequest("POST", base+"/api/ai/anthropic/messages",
		strings.NewReader(`{"messages":[{"role":"user","content":"hi"}],"stream":true}`))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadGateway {
		t.Fatalf("stream: %d %s, want 502: the provider failed before the first piece", resp.StatusCode, body)
	}
	_, bud := call(t, "GET", base+"/api/ai/budget", token, nil)
	spent, _ := bud["spent"].(float64)
	if spent <= 0 {
		t.Fatalf("budget after the failed call: %v, want its prompt charged", bud)
	}
	if code := s.stop(t); code != 0 {
		t.Fatalf("serve exited %d", code)
	}

	s = startServe(t, dir, env)
	defer s.stop(t)
	base = "http://" + s.addr
	_, bud = call(t, "GET", base+"/api/ai/budget", token, nil)
	if bud["spent"] != spent || bud["reserved"] != 0.0 {
		t.Errorf("budget after a restart: %v, want spent %v as before and nothing reserved", bud, spent)
	}
	_, sum := call(t, "GET", base+"/api/ai/usage?days=1", token, nil)
	if sum["totalRequests"] != 0.0 || sum["totalCost"] != 0.0 {
		t.Errorf("usage report %v: want no answered call", sum)
	}
}
