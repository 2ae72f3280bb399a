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

	"go.mongodb.org/mongo-driver/event"
	"go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"

	"github.com/acme/app/internal/store/storetest"
)

// recordAll queues n records of user u.
func recordAll(t *testing.T, svc *Service, u string, n int) {
	t.Helper()
	for i := range n {
		if err := svc.Record(context.Background(), rec(i, u, "openai", "gpt-4o-mini", day0)); err != nil {
			t.Fatal(err)
		}
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
	// The flush interval never passes: the recorder writes one batch, at Close.
	f := newFixtureOn(t, client.Database(storetest.DBName(t)), RecorderOptions{FlushInterval: time.Hour})

	recordAll(t, f.svc, "u", 2*logChunk+22)
	if err := f.svc.Close(ctx); err != nil {
		t.Fatal(err)
	}
	assertRollupEqualsLog(t, f, []string{"u"}, 2*logChunk+22)
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
	obs := &rejectCounter{}
	f := newFixture(t, RecorderOptions{FlushInterval: time.Hour, Observer: obs})
	fa := &failingAfter{sink: f.sink}
	fa.allowed.Store(1)
	f.svc.rec.sink = fa
	recordAll(t, f.svc, "u", 2*logChunk+22)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	lost := logChunk + 22
	err := f.svc.Close(ctx)
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("%d records could not be written", lost)) {
		t.Fatalf("Close: %v, want %d records lost", err, lost)
	}
	if got := obs.n.Load(); got != int64(lost) {
		t.Fatalf("%d records counted as rejected, want %d", got, lost)
	}
	assertRollupEqualsLog(t, f, []string{"u"}, logChunk)
}
