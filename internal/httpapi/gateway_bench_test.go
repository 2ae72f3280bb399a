package httpapi

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/bson"

	"github.com/acme/app/internal/ai"
	"github.com/acme/app/internal/auth"
	"github.com/acme/app/internal/budget"
	"github.com/acme/app/internal/gateway"
	"github.com/acme/app/internal/store/storetest"
)

// BenchmarkGateway measures, against an in-process OpenAI fake answering as fast as it can:
//
//   - v1-vs-api: POST /v1/chat/completions beside the same call on /api/ai/openai/chat,
//     interleaved ("cpu-ratio" = CPU per /api call / CPU per /v1 call; target >= 1/1.1);
//   - budget-on-vs-off: /api/ai/openai/chat with the monthly budget on (the caller has one)
//     beside the same service without it, interleaved ("ratio" = throughput on / off), then
//     the p50 of each from one client ("p50-off-ms", "p50-on-ms", "added-p50-ms");
//   - budget-floor: one conditional update of a budget document alone on the embedded store,
//     the floor of each of the budget's two round trips ("p50-ms"), and a Reserve+Settle pair.
func BenchmarkGateway(b *testing.B) {
	ctx := context.Background()
	up := fastUpstream(b)
	tokens := auth.NewTokens(secret, time.Hour)
	const userID = "64b000000000000000000001"
	token, _ := tokens.Issue(auth.Caller{ID: userID, Email: "a@example.com", Roles: []string{"user"}})
	db := storetest.DB(b)
	budgets, err := budget.New(ctx, db, budget.Options{})
	if err != nil {
		b.Fatal(err)
	}
	limit := 1e6
	if _, err := budgets.SetLimit(ctx, userID, &limit); err != nil {
		b.Fatal(err)
	}
	prices, _ := ai.LoadPrices("", nil)
	newServer := func(hook ai.Budget) *httptest.Server {
		svc := ai.New(ai.Options{
			Providers: map[string]ai.ProviderConfig{"openai": {APIKey: "sk-bench", BaseURL: up.URL + "/v1", DefaultModel: "gpt-4o-mini"}},
			Timeout:   30 * time.Second, Recorder: discardRecorder{}, Prices: prices, Budget: hook,
		})
		gw := gateway.New(gateway.Options{AI: svc, Prices: prices, Providers: map[string]string{"openai": "gpt-4o-mini"}})
		srv := httptest.NewServer(NewServer(stackOptions(), Deps{Tokens: tokens, AI: svc, Gateway: gw}))
		b.Cleanup(srv.Close)
		return srv
	}
	off, on := newServer(nil), newServer(budgetHook{budgets})
	api := []byte(`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Say hello in one short sentence."}]}`)
	v1 := []byte(`{"model":"openai/gpt-4o-mini","messages":[{"role":"user","content":"Say hello in one short sentence."}]}`)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64, MaxIdleConns: 128}}

	b.Run("v1-vs-api/c8", func(b *testing.B) {
		interleavedRatio(b, 8, requester(client, "POST", off.URL+"/api/ai/openai/chat", token, api),
			requester(client, "POST", off.URL+"/v1/chat/completions", token, v1))
	})
	b.Run("budget-on-vs-off/c8", func(b *testing.B) {
		interleavedRatio(b, 8, requester(client, "POST", off.URL+"/api/ai/openai/chat", token, api),
			requester(client, "POST", on.URL+"/api/ai/openai/chat", token, api))
	})
	b.Run("budget-on-vs-off/c1-p50", func(b *testing.B) {
		callOff := requester(client, "POST", off.URL+"/api/ai/openai/chat", token, api)
		callOn := requester(client, "POST", on.URL+"/api/ai/openai/chat", token, api)
		// A fixed number of calls, alternating, whatever b.N: the framework would scale b.N
		// by the time of all of them.
		var dOff, dOn []time.Duration
		for range 200 {
			start := time.Now()
			_ = callOff()
			dOff = append(dOff, time.Since(start))
			start = time.Now()
			_ = callOn()
			dOn = append(dOn, time.Since(start))
		}
		pOff, pOn := median(dOff), median(dOn)
		b.ReportMetric(pOff, "p50-off-ms")
		b.ReportMetric(pOn, "p50-on-ms")
		b.ReportMetric(pOn-pOff, "added-p50-ms")
	})
	b.Run("budget-floor/update", func(b *testing.B) {
		coll := db.Collection("bench_floor")
		if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: "u|2026-11"}, {Key: "left", Value: 1e9}, {Key: "reserved", Value: 0.0}}); err != nil {
			b.Fatal(err)
		}
		filter := bson.D{{Key: "_id", Value: "u|2026-11"}, {Key: "left", Value: bson.D{{Key: "$gte", Value: 0.001}}}}
		update := bson.D{{Key: "$inc", Value: bson.D{{Key: "left", Value: -0.001}, {Key: "reserved", Value: 0.001}}}}
		b.ReportMetric(measureP50(b, func() {
			if _, err := coll.UpdateOne(ctx, filter, update); err != nil {
				b.Fatal(err)
			}
		}), "p50-ms")
	})
	b.Run("budget-floor/reserve-settle", func(b *testing.B) {
		b.ReportMetric(measureP50(b, func() {
			r, err := budgets.Reserve(ctx, userID, 0.001)
			if err != nil {
				b.Fatal(err)
			}
			r.Settle(ctx, 0.0005)
		}), "p50-ms")
	})
}

// median returns the middle of d in milliseconds.
func median(d []time.Duration) float64 {
	slices.Sort(d)
	return float64(d[len(d)/2].Microseconds()) / 1000
}
