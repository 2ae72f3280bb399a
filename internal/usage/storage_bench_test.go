package usage

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/bson"

	"github.com/acme/app/internal/store"
)

// BenchmarkStorageBytesPerRecord measures how much the embedded store's data directory grows
// per recorded request: USAGE_STORAGE_RECORDS (default 20,000) realistic records from 50
// users over 3 models, written through the recorder into a fresh store, then the directory
// size after the store is closed (its WAL checkpointed), and again after `compact` (SQLite
// VACUUM) of the collections. USAGE_STORAGE_DIR keeps the directory for a look
// inside (it must not exist yet). Reported as bytes/record and bytes/record-compacted.
func BenchmarkStorageBytesPerRecord(b *testing.B) {
	n := 20_000
	if v, err := strconv.Atoi(os.Getenv("USAGE_STORAGE_RECORDS")); err == nil && v > 0 {
		n = v
	}
	for range b.N {
		dir := b.TempDir()
		if keep := os.Getenv("USAGE_STORAGE_DIR"); keep != "" { // to look inside afterwards
			dir = keep
		}
		ctx := context.Background()
		open := func() *store.Store {
			st, err := store.Open(ctx, store.Options{DataDir: dir})
			if err != nil {
				b.Fatal(err)
			}
			return st
		}
		st := open()
		db := st.DB("app")
		svc := New(db, Options{})
		if err := svc.EnsureIndexes(ctx); err != nil {
			b.Fatal(err)
		}
		_ = svc.Close(ctx)
		_ = st.Close(ctx)
		empty := dirSize(b, dir)

		st = open()
		svc = New(st.DB("app"), Options{})
		start := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
		models := []string{"gpt-4o-mini", "claude-3-5-haiku-20241022", "gemini-2.0-flash"}
		providers := []string{"openai", "anthropic", "gemini"}
		for i := range n {
			m := i % 3
			r := Record{
				RequestID: fmt.Sprintf("%08x-1c2d-4e5f-8a9b-%012x", i, i*7919), UserID: fmt.Sprintf("65a1f0c2e4b0%012x", i%50),
				Provider: providers[m], Model: models[m], Status: StatusSuccess, UpstreamStatus: 200,
				PromptTokens: int64(200 + i%900), CompletionTokens: int64(50 + i%400), CachedTokens: int64(i % 64),
				Cost: RoundCost(float64(i%1000) * 1.5e-7), Prices: &UnitPrices{Entry: models[m], Input: 1.5e-7, Output: 6e-7, CacheRead: 7.5e-8},
				ProviderRequestID: fmt.Sprintf("chatcmpl-%024x", i), Attempts: 1, LatencyMs: int64(300 + i%2000),
				CreatedAt: start.Add(time.Duration(i) * 13 * time.Second),
			}
			r.TotalTokens = r.PromptTokens + r.CompletionTokens
			if err := svc.Record(ctx, r); err != nil {
				b.Fatal(err)
			}
		}
		if err := svc.Close(ctx); err != nil {
			b.Fatal(err)
		}
		_ = st.Close(ctx)
		written := dirSize(b, dir)

		st = open()
		for _, c := range []string{RequestsCollection, DailyCollection} {
			if err := st.DB("app").RunCommand(ctx, bson.D{{Key: "compact", Value: c}, {Key: "force", Value: true}}).Err(); err != nil {
				b.Fatalf("compact %s: %v", c, err)
			}
		}
		_ = st.Close(ctx)
		compacted := dirSize(b, dir)
		b.ReportMetric(float64(written-empty)/float64(n), "bytes/record")
		b.ReportMetric(float64(compacted-empty)/float64(n), "bytes/record-compacted")
	}
}

// dirSize sums the sizes of the files under dir.
func dirSize(tb testing.TB, dir string) int64 {
	tb.Helper()
	var total int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err == nil {
			total += info.Size()
		}
		return err
	})
	if err != nil {
		tb.Fatal(err)
	}
	return total
}
