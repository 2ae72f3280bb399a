package usage

import (
	"context"
	"slices"
	"sync"
	"testing"

	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/event"
	"go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"

	"github.com/acme/app/internal/store/storetest"
)

// TestInsertLog_Chunks: a batch reaches the store as inserts of at most logChunk records, all of
// them stored, and a resent batch (an answer lost) is taken as stored without a copy.
func TestInsertLog_Chunks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var mu sync.Mutex
	var sizes []int
	monitor := &event.CommandMonitor{Started: func(_ context.Context, e *event.CommandStartedEvent) {
		if e.CommandName != "insert" || e.Command.Lookup("insert").StringValue() != RequestsCollection {
			return
		}
		docs, err := e.Command.Lookup("documents").Array().Values()
		if err != nil {
			t.Errorf("insert without documents: %v", err)
		}
		mu.Lock()
		sizes = append(sizes, len(docs))
		mu.Unlock()
	}}
	client, err := mongo.Connect(ctx, options.Client().ApplyURI(storetest.Store(t).URI()).SetMonitor(monitor))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Disconnect(context.Background()) })
	db := client.Database(storetest.DBName(t))
	sink := NewReader(db, Options{}).sink()

	n := 2*logChunk + 22
	recs := make([]Record, n)
	for i := range recs {
		recs[i] = rec(i, "u1", "openai", "gpt-4o-mini", day0)
	}
	for attempt := 1; attempt <= 2; attempt++ {
		if err := sink.insertLog(ctx, recs); err != nil {
			t.Fatalf("attempt %d: %v", attempt, err)
		}
		stored, err := db.Collection(RequestsCollection).CountDocuments(ctx, bson.D{})
		if err != nil {
			t.Fatal(err)
		}
		if stored != int64(n) {
			t.Fatalf("attempt %d: %d records stored, want %d", attempt, stored, n)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if want := []int{logChunk, logChunk, 22, logChunk, logChunk, 22}; !slices.Equal(sizes, want) {
		t.Fatalf("inserts of %v records, want %v", sizes, want)
	}
}
