package cmd

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/acme/app/internal/ai/aitest"
)

// startMock runs `app mock serve args...` in-process on a free port and returns its address.
func startMock(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	logs := &lockedBuffer{}
	addrc := make(chan string, 1)
	done := make(chan int, 1)
	f := &factory{in: strings.NewReader(""), out: logs, errOut: logs, getenv: func(string) string { return "" },
		onListen: func(a string) { addrc <- a }}
	go func() { done <- run(ctx, f, append([]string{"mock", "serve", "--port", "0"}, args...)) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			t.Error("mock serve did not stop")
		}
	})
	select {
	case addr := <-addrc:
		return addr
	case code := <-done:
		t.Fatalf("mock serve exited with %d: %s", code, logs.String())
	case <-time.After(20 * time.Second):
		t.Fatal("mock serve did not listen")
	}
	return ""
}

// parityRequest is one request of the table both servers answer.
type parityRequest struct {
	name, method, path, ctype, body string
	token                           string // "admin", "user" or ""
}

// frontEndHeaders are the answer headers a front end reads.
var frontEndHeaders = []string{"Content-Type", "Allow", "X-Templates-Source", "Retry-After", "WWW-Authenticate"}

// answer is what the comparison sees of one response.
type answer struct {
	Status    int
	Headers   map[string]string
	RequestID bool
	Shape     string
}

// shape describes a JSON value by its structure: object keys (sorted) with the shapes of
// their values, an array's first element, the type of a scalar.
func shape(v any) string {
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = k + ":" + shape(x[k])
		}
		return "{" + strings.Join(parts, ",") + "}"
	case []any:
		if len(x) == 0 {
			return "[]"
		}
		return "[" + shape(x[0]) + "]"
	case string:
		return "string"
	case float64:
		return "number"
	case bool:
		return "bool"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%T", v)
}

// Ensure the built-in mock answers as `app serve` does: one table of requests (accounts,
// errors, AI, usage, templates, storage validation) goes to `app serve` with fake providers
// and the demo data (`app dev seed`) and to `app mock serve`; statuses, the headers a front
// end reads, the presence of X-Request-Id and the shapes of the bodies must be equal.
func TestMockServe_BuiltinMatchesServe(t *testing.T) {
	// Not parallel: ferretdb.New writes a package global, so two embedded stores must not
	// start at once in one process.
	dir := t.TempDir()
	env := []string{"APP_RATELIMIT_LIMIT", "100000", "APP_RATELIMIT_AUTH_LIMIT", "100000"}
	for _, p := range []string{"openai", "anthropic", "gemini"} {
		fake := aitest.New(t, p)
		up := strings.ToUpper(p)
		env = append(env, "APP_AI_"+up+"_BASE_URL", fake.BaseURL(), "APP_AI_"+up+"_API_KEY", "k-"+p)
	}
	getenv := testEnv(env...)
	if r := runApp(t, getenv, "dev", "seed", "--data-dir", dir); r.code != 0 {
		t.Fatalf("dev seed: %d %s", r.code, r.errOut)
	}
	servers := map[string]string{"serve": startServe(t, dir, getenv).addr, "mock": startMock(t)}

	const space = "/api/spaces/65f000000000000000000001/properties"
	table := []parityRequest{
		{name: "Health", method: "GET", path: "/api/health"},
		{name: "Banner", method: "GET", path: "/api"},
		{name: "UnknownRoute", method: "GET", path: "/api/nope"},
		{name: "WrongMethod", method: "PUT", path: "/api/auth/login", ctype: "application/json", body: `{}`},
		{name: "LoginTextPlain", method: "POST", path: "/api/auth/login", ctype: "text/plain", body: `{"email":"admin@example.com","password":"admin123"}`},
		{name: "LoginWrongPassword", method: "POST", path: "/api/auth/login", ctype: "application/json", body: `{"email":"admin@example.com","password":"nope-nope"}`},
		{name: "LoginDemoAdmin", method: "POST", path: "/api/auth/login", ctype: "application/json", body: `{"email":"admin@example.com","password":"admin123"}`},
		{name: "RegisterInvalid", method: "POST", path: "/api/auth/register", ctype: "application/json", body: `{"email":"x","password":1}`},
		{name: "RegisterTaken", method: "POST", path: "/api/auth/register", ctype: "application/json", body: `{"email":"user@example.com","password":"user123","name":"U"}`},
		{name: "ProfileNoToken", method: "GET", path: "/api/auth/profile"},
		{name: "Profile", method: "GET", path: "/api/auth/profile", token: "user"},
		{name: "ChatOpenAI", method: "POST", path: "/api/ai/openai/chat", token: "user", ctype: "application/json", body: `{"messages":[{"role":"user","content":"hi"}]}`},
		{name: "ChatAnthropic", method: "POST", path: "/api/ai/anthropic/messages", token: "user", ctype: "application/json", body: `{"messages":[{"role":"user","content":"hi"}]}`},
		{name: "ChatGemini", method: "POST", path: "/api/ai/gemini/generate", token: "user", ctype: "application/json", body: `{"messages":[{"role":"user","content":"hi"}]}`},
		{name: "ChatOpenAIStream", method: "POST", path: "/api/ai/openai/chat", token: "user", ctype: "application/json", body: `{"messages":[{"role":"user","content":"hi"}],"stream":true}`},
		{name: "ChatAnthropicStream", method: "POST", path: "/api/ai/anthropic/messages", token: "user", ctype: "application/json", body: `{"messages":[{"role":"user","content":"hi"}],"stream":true}`},
		{name: "ChatGeminiStream", method: "POST", path: "/api/ai/gemini/generate", token: "user", ctype: "application/json", body: `{"messages":[{"role":"user","content":"hi"}],"stream":true}`},
		{name: "ChatInvalid", method: "POST", path: "/api/ai/openai/chat", token: "user", ctype: "application/json", body: `{"messages":"hi"}`},
		{name: "Usage", method: "GET", path: "/api/ai/usage", token: "user"},
		{name: "UsageProviders", method: "GET", path: "/api/ai/usage/providers", token: "user"},
		{name: "TemplatesList", method: "GET", path: space + "/templates", token: "user"},
		{name: "TemplateGet", method: "GET", path: space + "/templates/text-input", token: "user"},
		{name: "TemplateMissing", method: "GET", path: space + "/templates/nope", token: "user"},
		{name: "TemplateInvalid", method: "POST", path: space + "/templates", token: "user", ctype: "application/json", body: `{"widgetType":"x"}`},
		{name: "MigrateNotAdmin", method: "POST", path: space + "/migrate-templates-to-core", token: "user"},
		{name: "MigrateDryRun", method: "POST", path: space + "/migrate-templates-to-core?dryRun=true", token: "admin"},
		{name: "MigrateDryRunMaybe", method: "POST", path: space + "/migrate-templates-to-core?dryRun=maybe", token: "admin"},
		{name: "CleanupDryRun", method: "DELETE", path: space + "/cleanup-space-templates?dryRun=true", token: "admin"},
		{name: "StorageInvalid", method: "POST", path: "/api/storage/mongodb/test", token: "user", ctype: "application/json", body: `{"uri":42}`},
		{name: "StorageQueryInvalid", method: "POST", path: "/api/storage/mongodb/query", token: "user", ctype: "application/json", body: `{}`},
	}
	got := map[string]map[string]answer{}
	for name, addr := range servers {
		tokens := map[string]string{"admin": login(t, addr, "admin@example.com", "admin123"), "user": login(t, addr, "user@example.com", "user123")}
		got[name] = map[string]answer{}
		for _, rq := range table {
			if rq.name == "Usage" {
				waitRecorded(t, addr, tokens["user"])
			}
			got[name][rq.name] = send(t, addr, rq, tokens[rq.token])
		}
	}
	for _, rq := range table {
		s, m := got["serve"][rq.name], got["mock"][rq.name]
		if fmt.Sprint(s) != fmt.Sprint(m) {
			t.Errorf("%s %s %s:\n serve: %+v\n mock:  %+v", rq.name, rq.method, rq.path, s, m)
		}
		// Equal is not enough where both could fail alike: a streamed call streams.
		if strings.HasSuffix(rq.name, "Stream") && (m.Status != 200 || !strings.HasPrefix(m.Shape, "events:delta={text:string}")) {
			t.Errorf("%s: the mock answered %d %s, want a stream of deltas", rq.name, m.Status, m.Shape)
		}
	}
}

// waitRecorded waits until the calls just made show in the caller's usage: the recorder
// writes behind the answers, so a read right after a call may not see it yet.
func waitRecorded(t *testing.T, addr, token string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		_, body := do(t, addr, parityRequest{method: "GET", path: "/api/ai/usage/providers"}, token)
		var rows []any
		if json.Unmarshal(body, &rows) == nil && len(rows) > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("usage on %s shows no calls after 15 s: %s", addr, body)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func login(t *testing.T, addr, email, password string) string {
	t.Helper()
	a, body := do(t, addr, parityRequest{method: "POST", path: "/api/auth/login", ctype: "application/json",
		body: fmt.Sprintf(`{"email":%q,"password":%q}`, email, password)}, "")
	var res struct {
		AccessToken string `json:"accessToken"`
	}
	if a.Status != 200 || json.Unmarshal(body, &res) != nil || res.AccessToken == "" {
		t.Fatalf("login %s on %s: %d %s", email, addr, a.Status, body)
	}
	return res.AccessToken
}

func send(t *testing.T, addr string, rq parityRequest, token string) answer {
	a, _ := do(t, addr, rq, token)
	return a
}

func do(t *testing.T, addr string, rq parityRequest, token string) (answer, []byte) {
	t.Helper()
	req, err := http.NewRequest(rq.method, "http://"+addr+rq.path, strings.NewReader(rq.body))
	if err != nil {
		t.Fatal(err)
	}
	if rq.ctype != "" {
		req.Header.Set("Content-Type", rq.ctype)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", rq.method, rq.path, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	a := answer{Status: resp.StatusCode, Headers: map[string]string{}, RequestID: resp.Header.Get("X-Request-Id") != ""}
	for _, h := range frontEndHeaders {
		if v := resp.Header.Get(h); v != "" {
			a.Headers[h] = v
		}
	}
	var v any
	switch {
	case strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream"):
		a.Shape = "events:" + eventShapes(body)
	case json.Unmarshal(body, &v) == nil:
		a.Shape = shape(v)
	default:
		a.Shape = "text:" + string(body)
	}
	return a, body
}

// eventShapes describes a server-sent event stream as its events' names with the shapes of
// their JSON data, in order.
func eventShapes(body []byte) string {
	var out []string
	for _, block := range strings.Split(strings.TrimSpace(string(body)), "\n\n") {
		name, data := "", ""
		for _, line := range strings.Split(block, "\n") {
			if v, ok := strings.CutPrefix(line, "event: "); ok {
				name = v
			} else if v, ok := strings.CutPrefix(line, "data: "); ok {
				data = v
			}
		}
		var v any
		if json.Unmarshal([]byte(data), &v) != nil {
			out = append(out, name+"="+data)
			continue
		}
		out = append(out, name+"="+shape(v))
	}
	return strings.Join(out, " ")
}
