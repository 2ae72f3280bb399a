package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/acme/app/internal/ai/aitest"
	"github.com/acme/app/internal/store"
)

// call sends method path with a JSON body and a bearer token and decodes the JSON answer.
func call(t *testing.T, method, url, token string, body any) (int, map[string]any) {
	t.Helper()
	var rd bytes.Buffer
	if body != nil {
		_ = json.NewEncoder(&rd).Encode(body)
	}
	req, err := http.NewRequest(method, url, &rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Errorf("%s %s: %v", method, url, err)
		return 0, nil
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

// Ensure two `app serve` replicas on one MongoDB (TEST_MONGODB_URI: CI serves one with `app
// store serve`) share one monthly budget and one usage rollup exactly: every answered cost is
// spent once, nothing stays reserved, the month never goes over its limit, and usage read
// from either replica equals what was answered.
func TestServe_TwoReplicasShareBudgetAndUsage(t *testing.T) {
	uri := os.Getenv("TEST_MONGODB_URI")
	if uri == "" {
		t.Skip("TEST_MONGODB_URI is not set: replicas need a shared MongoDB")
	}
	fake := aitest.New(t, "openai")
	db := fmt.Sprintf("replicas_%d_%d", os.Getpid(), time.Now().UnixNano())
	env := testEnv("APP_MONGODB_URI", uri, "APP_MONGODB_DATABASE", db, "APP_CORE_DATABASE", db+"_core",
		"APP_AI_OPENAI_API_KEY", "k", "APP_AI_OPENAI_BASE_URL", fake.BaseURL(),
		"APP_RATELIMIT_LIMIT", "100000", "APP_RATELIMIT_AUTH_LIMIT", "100000")
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if c, err := store.Connect(ctx, uri); err == nil {
			_ = c.Database(db).Drop(ctx)
			_ = c.Database(db + "_core").Drop(ctx)
			_ = c.Disconnect(ctx)
		}
	})
	replicas := []*server{startServe(t, t.TempDir(), env), startServe(t, t.TempDir(), env)}
	base := func(i int) string { return "http://" + replicas[i%2].addr }

	email := "replica@example.com"
	code, reg := call(t, "POST", base(0)+"/api/auth/register", "", map[string]string{"email": email, "password": "secret12", "name": "Replica"})
	if code != 201 {
		t.Fatalf("register: %d %v", code, reg)
	}
	token, _ := reg["accessToken"].(string)
	chat := map[string]any{"messages": []map[string]string{{"role": "user", "content": "hi"}}}
	code, first := call(t, "POST", base(1)+"/api/ai/openai/chat", token, chat)
	cost, _ := first["cost"].(float64)
	if code != 200 || cost <= 0 {
		t.Fatalf("first call: %d %v", code, first)
	}
	// The budget starts from the usage log: wait until the first call is in it.
	waitFor(t, "the first call in the usage log", func() bool {
		_, usage := call(t, "GET", base(0)+"/api/ai/usage?days=1", token, nil)
		return usage["totalRequests"] == 1.0
	})
	// Room for about 30 calls, far less than the 80 made: the budget stops them.
	limit := math.Round(cost*30*1e10) / 1e10
	if r := runApp(t, env, "users", "budget", email, strconv.FormatFloat(limit, 'f', -1, 64)); r.code != 0 {
		t.Fatalf("users budget: %d %s", r.code, r.errOut)
	}
	// Replicas read limits set elsewhere within about a second.
	for i := range replicas {
		waitFor(t, fmt.Sprintf("replica %d to apply the limit", i), func() bool {
			_, bud := call(t, "GET", base(i)+"/api/ai/budget", token, nil)
			return bud["limit"] == limit
		})
	}

	var mu sync.Mutex
	answered, refused := []float64{cost}, 0
	var wg sync.WaitGroup
	next := make(chan int)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				code, body := call(t, "POST", base(i)+"/api/ai/openai/chat", token, chat)
				mu.Lock()
				switch code {
				case 200:
					c, _ := body["cost"].(float64)
					answered = append(answered, c)
				case 402:
					refused++
				default:
					t.Errorf("call %d: %d %v", i, code, body)
				}
				mu.Unlock()
			}
		}()
	}
	for i := range 80 {
		next <- i
	}
	close(next)
	wg.Wait()
	var want float64
	for _, c := range answered {
		want += c
	}
	if refused == 0 {
		t.Fatalf("no call refused among 80: the budget of $%g did not stop any", limit)
	}

	// Usage reaches the rollup within the recorders' flush; then every figure agrees.
	for i := range replicas {
		var usage, bud map[string]any
		ok := func() bool {
			_, usage = call(t, "GET", base(i)+"/api/ai/usage?days=1", token, nil)
			_, bud = call(t, "GET", base(i)+"/api/ai/budget", token, nil)
			requests, _ := usage["totalRequests"].(float64)
			total, _ := usage["totalCost"].(float64)
			spent, _ := bud["spent"].(float64)
			return int(requests) == len(answered) && math.Abs(total-want) < 1e-9 && math.Abs(spent-want) < 1e-9 &&
				bud["reserved"] == 0.0 && spent <= limit
		}
		if !poll(10*time.Second, ok) {
			t.Fatalf("replica %d: usage %v, budget %v; want %d requests, cost and spent %g (≤ %g), nothing reserved",
				i, usage, bud, len(answered), want, limit)
		}
	}
}

// poll reports whether cond became true within d: for state another process changes in the
// background, with no event to wait on from outside.
func poll(d time.Duration, cond func() bool) bool {
	for deadline := time.Now().Add(d); ; time.Sleep(50 * time.Millisecond) {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
	}
}

// waitFor fails the test unless cond becomes true within 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	if !poll(10*time.Second, cond) {
		t.Fatalf("waited 10 s for %s", what)
	}
}
