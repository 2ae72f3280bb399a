package usage

import (
	"bytes"
	"context"
	"errors"
	"runtime"
	"slices"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/mongo"

	"github.com/acme/app/internal/apperr"
	"github.com/acme/app/internal/store"
	"github.com/acme/app/internal/store/storetest"
)

// recorderLoops counts the goroutines running a recorder's loop.
func recorderLoops() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return bytes.Count(buf[:n], []byte("usage.(*recorder).loop("))
		}
		buf = make([]byte, 2*len(buf))
	}
}

// indexNames lists the indexes of coll ("_id_" included); none for a missing collection.
func indexNames(t *testing.T, coll *mongo.Collection) []string {
	t.Helper()
	cur, err := coll.Indexes().List(context.Background())
	if err != nil {
		var ce mongo.CommandError
		if errors.As(err, &ce) && ce.Code == 26 { // NamespaceNotFound
			return nil
		}
		t.Fatal(err)
	}
	var specs []struct {
		Name string `bson:"name"`
	}
	if err := cur.All(context.Background(), &specs); err != nil {
		t.Fatal(err)
	}
	names := make([]string, len(specs))
	for i, s := range specs {
		names[i] = s.Name
	}
	return names
}

// Ensure a reader starts no goroutine, creates no index and refuses to record, and reads what
// a recorder wrote; EnsureIndexes creates the indexes New and NewReader leave out. Not
// parallel: it counts the recorder goroutines of the whole test binary.
func TestNewReader_StartsNothing(t *testing.T) {
	db := storetest.DB(t)
	ctx := context.Background()
	before := recorderLoops()
	r := NewReader(db, Options{Now: func() time.Time { return day0 }})
	if got := recorderLoops(); got > before {
		t.Fatalf("NewReader started a recorder: %d recorder goroutines, %d before", got, before)
	}
	if _, err := r.Report(ctx, ReportOptions{Days: 7}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{RequestsCollection, DailyCollection} {
		if names := indexNames(t, db.Collection(c)); len(names) > 0 {
			t.Fatalf("a reader left indexes on %s: %v", c, names)
		}
	}
	if err := r.Record(ctx, rec(1, "u", "openai", "gpt-4o-mini", day0)); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("Record on a reader = %v, want ErrReadOnly", err)
	}
	if err := r.Admit(); apperr.KindOf(err) != apperr.Unavailable {
		t.Fatalf("Admit on a reader = %v, want Unavailable", err)
	}
	if err := r.Close(ctx); err != nil {
		t.Fatalf("Close on a reader = %v", err)
	}

	w := New(db, Options{Recorder: RecorderOptions{FlushInterval: time.Millisecond}})
	if err := w.Record(ctx, rec(1, "u", "openai", "gpt-4o-mini", day0)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(ctx); err != nil {
		t.Fatal(err)
	}
	rep, err := r.Report(ctx, ReportOptions{Days: 7})
	if err != nil || rep.Totals.TotalRequests != 1 {
		t.Fatalf("the reader's report = %+v, %v; want the one recorded request", rep, err)
	}
	if names := indexNames(t, db.Collection(RequestsCollection)); len(names) != 1 {
		t.Fatalf("a recorder's writes left indexes %v, want only _id_", names)
	}

	if err := r.EnsureIndexes(ctx); err != nil {
		t.Fatal(err)
	}
	// The embedded store reads no index but _id's, so it gets none (see store.EnsureIndexes).
	if names := indexNames(t, db.Collection(DailyCollection)); store.ReadsSecondaryIndexes(ctx, db.Collection(DailyCollection)) &&
		(!slices.Contains(names, "day_1") || !slices.Contains(names, "userId_1_day_1")) {
		t.Fatalf("%s indexes after EnsureIndexes: %v", DailyCollection, names)
	}
}
