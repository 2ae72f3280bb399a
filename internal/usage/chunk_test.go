package usage

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/event"
	"go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"

	"github.com/acme/app/internal/store/storetest"
)

// chunkFixture is a service on db whose recorder writes one batch at Close (the flush interval
// never passes), through wrap(sink) when wrap is set.
func chunkFixture(t *testing.T, db *mongo.Database, obs Observer, wrap func(sink) sink) *Service {
	t.Helper()
	svc := newService(db, Options{Now: func() time.Time { return day0 }})
	if err := svc.EnsureIndexes(context.Background()); err != nil {
		t.Fatal(err)
	}
	var sk sink = svc.sink()
	if wrap != nil {
		sk = wrap(sk)
	}
	svc.rec = newRecorder(sk, RecorderOptions{FlushInterval: time.Hour, RetryMin: time.Millisecond,
		RetryMax: 5 * time.Millisecond, Observer: obs}, svc.log)
	return svc
}

// recordAll queues n records of user u.
func recordAll(t *testing.T, svc *Service, u string, n int) {
	t.Helper()
	for i := range n {
		if err := svc.Record(context.Background(), rec(i, u, "openai", "gpt-4o-mini", day0)); err != nil {
			t.Fatal(err)
		}
	}
}

// assertStored checks that the log holds want records and the rollup counts them.
func assertStored(t *testing.T, svc *Service, db *mongo.Database, u string, want int64) {
	t.Helper()
	ctx := context.Background()
	stored, err := db.Collection(RequestsCollection).CountDocuments(ctx, bson.D{})
	if err != nil {
		t.Fatal(err)
	}
	sum, err := svc.Summary(ctx, u, 1)
	if err != nil {
		t.Fatal(err)
	}
	if stored != want || sum.TotalRequests != want {
		t.Fatalf("log holds %d records and the rollup counts %d, want %d", stored, sum.TotalRequests, want)
	}
}

// Ensure a batch reaches the store as inserts of at most logChunk records, all of them stored
// and added to the rollup.
func TestRecorder_LogInChunks(t *testing.T) {
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
	svc := chunkFixture(t, db, nil, nil)

	recordAll(t, svc, "u", 2*logChunk+22)
	if err := svc.Close(ctx); err != nil {
		t.Fatal(err)
	}
	assertStored(t, svc, db, "u", 2*logChunk+22)
	mu.Lock()
	defer mu.Unlock()
	if want := []int{logChunk, logChunk, 22}; !slices.Equal(sizes, want) {
		t.Fatalf("inserts of %v records, want %v", sizes, want)
	}
}

// failingAfter stores the first `allowed` inserts, then fails every one as a database that
// went down would.
type failingAfter struct {
	sink
	allowed atomic.Int64
}

func (s *failingAfter) insertLog(ctx context.Context, recs []Record) error {
	if s.allowed.Add(-1) < 0 {
		return errDown
	}
	return s.sink.insertLog(ctx, recs)
}

// Ensure that when the shutdown deadline passes in the middle of a batch, the inserts made
// before it are added to the rollup and only the records not stored are counted as lost.
func TestRecorder_DeadlineKeepsStoredChunks(t *testing.T) {
	t.Parallel()
	db := storetest.DB(t)
	obs := &rejectCounter{}
	svc := chunkFixture(t, db, obs, func(s sink) sink {
		f := &failingAfter{sink: s}
		f.allowed.Store(1)
		return f
	})
	recordAll(t, svc, "u", 2*logChunk+22)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	lost := logChunk + 22
	err := svc.Close(ctx)
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("%d records could not be written", lost)) {
		t.Fatalf("Close: %v, want %d records lost", err, lost)
	}
	if got := obs.n.Load(); got != int64(lost) {
		t.Fatalf("%d records counted as rejected, want %d", got, lost)
	}
	assertStored(t, svc, db, "u", logChunk)
}
