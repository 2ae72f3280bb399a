package usage

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strconv"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"

	"github.com/acme/app/internal/store/storetest"
)

// seedRollup writes the rollup of `requests` requests for user, spread evenly over `days`
// days ending at today and `models` models, straight into ai_usage_daily.
func seedRollup(tb testing.TB, coll *mongo.Collection, user string, requests int64, days, models int, today time.Time) {
	tb.Helper()
	per := requests / int64(days*models)
	docs := make([]any, 0, days)
	names := map[string]modelName{}
	for d := range days {
		day := Day(today.AddDate(0, 0, -d))
		ms := bson.M{}
		for m := range models {
			provider := []string{"openai", "anthropic", "gemini"}[m%3]
			model := fmt.Sprintf("model-%02d.%d", m, m%3)
			k := cellKey(provider, model) + "|"
			ms[k+fieldRequests], ms[k+fieldTokens], ms[k+fieldCost] = per, per*500, costUnits(float64(per)*0.0004)
			names[cellKey(provider, model)] = modelName{Key: cellKey(provider, model), Provider: provider, Model: model}
		}
		docs = append(docs, bson.M{"_id": dailyID(user, day), "userId": user, "day": day, "m": ms})
	}
	if _, err := coll.InsertMany(context.Background(), docs, options.InsertMany().SetOrdered(false)); err != nil {
		tb.Fatal(err)
	}
	// The monthly documents, as the recorder writes them beside the rollup.
	monthly := coll.Database().Collection(MonthlyCollection)
	for d := range days {
		day := Day(today.AddDate(0, 0, -d))
		p := "d." + day[8:] + "|"
		calls := per * int64(models)
		if _, err := monthly.UpdateOne(context.Background(), bson.M{"_id": monthlyID(user, day)},
			bson.M{"$set": bson.M{"userId": user, "month": day[:7], p + fieldRequests: calls, p + fieldTokens: calls * 500,
				p + fieldCost: int64(models) * costUnits(float64(per)*0.0004)}}, options.Update().SetUpsert(true)); err != nil {
			tb.Fatal(err)
		}
	}
	if _, err := monthly.UpdateOne(context.Background(), bson.M{"_id": sinceID}, bson.M{"$setOnInsert": bson.M{"day": "2000-01-01"}},
		options.Update().SetUpsert(true)); err != nil {
		tb.Fatal(err)
	}
	for _, n := range names {
		if _, err := coll.Database().Collection(ModelsCollection).InsertOne(context.Background(), n); err != nil && !mongo.IsDuplicateKeyError(err) {
			tb.Fatal(err)
		}
	}
}

// BenchmarkUsageReads measures the service calls behind GET /api/ai/usage, /providers and
// /daily on the embedded store, in one run, for a user with 1M requests over 30 days and 20
// models and for one with 10M (daily: the same requests over 90 days, read over 90), each
// user's rollup in its own database, seeded directly. With
// USAGE_BENCH_OTHERS=N, each database also holds N other users with 30 days of 3 models, to
// show how the embedded store's full scans grow with the collection (real MongoDB uses the
// {userId, day} index instead).
func BenchmarkUsageReads(b *testing.B) {
	others := 0
	if v, err := strconv.Atoi(os.Getenv("USAGE_BENCH_OTHERS")); err == nil {
		others = v
	}
	today := time.Now().UTC()
	ctx := context.Background()
	for _, sc := range []struct {
		name     string
		requests int64
	}{{"1M", 1_000_000}, {"10M", 10_000_000}} {
		svc := newService(storetest.DB(b), Options{})
		if err := svc.EnsureIndexes(ctx); err != nil {
			b.Fatal(err)
		}
		seedRollup(b, svc.daily, "user", sc.requests, 30, 20, today)
		seedRollup(b, svc.daily, "user90", sc.requests, 90, 20, today) // the same calls over 90 days
		for i := range others {
			seedRollup(b, svc.daily, fmt.Sprintf("other-%04d", i), 3000, 30, 3, today)
		}
		b.Run("summary/"+sc.name, func(b *testing.B) {
			p50(b, func() {
				s, err := svc.Summary(ctx, "user", 30)
				if err != nil || s.TotalRequests < sc.requests*99/100 {
					b.Fatalf("%+v %v", s, err)
				}
			})
		})
		b.Run("providers/"+sc.name, func(b *testing.B) {
			p50(b, func() {
				rows, err := svc.ByProvider(ctx, "user", 30)
				if err != nil || len(rows) != 20 {
					b.Fatalf("%d rows, %v", len(rows), err)
				}
			})
		})
		b.Run("daily90-cold/"+sc.name, func(b *testing.B) { // read from the monthly documents, nothing in memory
			p50(b, func() {
				svc.settled.Purge()
				svc.since.Store(nil)
				if days, err := svc.Daily(ctx, "user90", 90); err != nil || len(days) != 90 || days[0].Requests == 0 {
					b.Fatalf("%d days, %v", len(days), err)
				}
			})
		})
		b.Run("daily90/"+sc.name, func(b *testing.B) { // read from the monthly documents
			p50(b, func() {
				days, err := svc.Daily(ctx, "user90", 90)
				if err != nil || len(days) != 90 || days[89].Requests == 0 {
					b.Fatalf("%d days, %v", len(days), err)
				}
			})
		})
		// Days before the monthly documents' first day (an upgraded store): one rollup lookup
		// per day, and days before yesterday from memory once read.
		late := "2999-01-01"
		svc.since.Store(&late)
		b.Run("daily90-days-cold/"+sc.name, func(b *testing.B) {
			p50(b, func() {
				svc.settled.Purge()
				if days, err := svc.Daily(ctx, "user90", 90); err != nil || len(days) != 90 || days[0].Requests == 0 {
					b.Fatalf("%d days, %v", len(days), err)
				}
			})
		})
		b.Run("daily90-days/"+sc.name, func(b *testing.B) {
			p50(b, func() {
				if days, err := svc.Daily(ctx, "user90", 90); err != nil || len(days) != 90 || days[0].Requests == 0 {
					b.Fatalf("%d days, %v", len(days), err)
				}
			})
		})
		svc.since.Store(nil)
	}
}

// BenchmarkRecorder measures records/s written through the batching recorder into the
// embedded store (20 users, 3 models each), Close included.
func BenchmarkRecorder(b *testing.B) {
	db := storetest.DB(b)
	svc := New(db, Options{})
	if err := svc.EnsureIndexes(context.Background()); err != nil {
		b.Fatal(err)
	}
	now := time.Now().UTC()
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		r := Record{RequestID: fmt.Sprintf("bench-%09d", i), UserID: fmt.Sprintf("u%02d", i%20), Provider: "openai",
			Model: []string{"gpt-6-luna", "gpt-4o-mini", "gpt-5-nano"}[i%3], Status: StatusSuccess, UpstreamStatus: 200,
			PromptTokens: 12, CompletionTokens: 30, TotalTokens: 42, Cost: 1.6e-5, LatencyMs: 300, CreatedAt: now}
		if err := svc.Record(context.Background(), r); err != nil {
			b.Fatal(err)
		}
	}
	if err := svc.Close(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "records/s")
	n, _ := db.Collection(RequestsCollection).CountDocuments(context.Background(), bson.D{})
	if n != int64(b.N) {
		b.Fatalf("%d records stored, want %d", n, b.N)
	}
}

// p50 runs fn b.N times and reports the median duration in ms.
func p50(b *testing.B, fn func()) {
	b.Helper()
	d := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t := time.Now()
		fn()
		d = append(d, time.Since(t))
	}
	b.StopTimer()
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	b.ReportMetric(float64(d[len(d)/2].Microseconds())/1000, "p50-ms")
}
