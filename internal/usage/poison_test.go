package usage

import (
	"context"
	"errors"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo"

	"github.com/acme/app/internal/apperr"
	"github.com/acme/app/internal/store/storetest"
)

// Ensure poisoned records (as a hostile provider answer could make them) never stop the
// recorder: names with dots and dollars are stored as values and counted; NUL, oversized and
// overflowing records are set aside in usage_rejected with their request id; every record
// after them is written, and a Close right after loses nothing.
func TestRecorder_PoisonedRecords(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		poison   func(*Record)
		rejected bool
	}{
		{"dotted model", func(r *Record) { r.Model = "gpt-4.1.mini" }, false},
		{"dollar model", func(r *Record) { r.Model = "$where" }, false},
		{"dollar and dots", func(r *Record) { r.Model = "$a.b.$c" }, false},
		{"NUL in model", func(r *Record) { r.Model = "gpt\x00x" }, true},
		{"NUL in request id", func(r *Record) { r.RequestID += "\x00" }, true},
		{"oversized model", func(r *Record) { r.Model = strings.Repeat("m", 10_000) }, true},
		{"not UTF-8", func(r *Record) { r.Model = "\xff\xfe" }, true},
		{"int64 overflow", func(r *Record) { r.TotalTokens = math.MaxInt64 }, true},
		{"prompt tokens past 1e9", func(r *Record) { r.PromptTokens = MaxTokens + 1 }, true},
		{"negative count", func(r *Record) { r.CompletionTokens = -5 }, true},
		{"NaN cost", func(r *Record) { r.Cost = math.NaN() }, true},
		{"unknown status", func(r *Record) { r.Status = "ok" }, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, RecorderOptions{BatchSize: 4, FlushInterval: time.Millisecond})
			ctx := context.Background()
			// Two poisoned records among good ones, in the same batches, twice over so that a
			// stuck recorder would show.
			var good int64
			for i := range 20 {
				r := rec(i, "u", "openai", "gpt-4o-mini", day0)
				if i == 3 || i == 11 {
					tt.poison(&r)
				} else {
					good++
				}
				if err := f.svc.Record(ctx, r); err != nil {
					t.Fatal(err)
				}
			}
			if err := f.svc.Close(ctx); err != nil {
				t.Fatalf("Close: %v", err)
			}
			wantLog, wantRejected := int64(20), int64(0)
			if tt.rejected {
				wantLog, wantRejected = good, 2
			}
			n, err := f.db.Collection(RequestsCollection).CountDocuments(ctx, bson.D{})
			if err != nil || n != wantLog {
				t.Fatalf("ai_requests holds %d (%v), want %d", n, err, wantLog)
			}
			var rejs []rejection
			cur, err := f.db.Collection(RejectedCollection).Find(ctx, bson.D{})
			if err != nil || cur.All(ctx, &rejs) != nil {
				t.Fatalf("read usage_rejected: %v", err)
			}
			if int64(len(rejs)) != wantRejected || f.svc.RecorderState().Rejected != wantRejected {
				t.Fatalf("usage_rejected holds %d, state says %d; want %d", len(rejs), f.svc.RecorderState().Rejected, wantRejected)
			}
			for _, rj := range rejs {
				if !strings.HasPrefix(rj.RequestID, "req-u-0000") || rj.Reason == "" || strings.Contains(rj.RequestID, "\x00") {
					t.Errorf("rejection %+v: want the request id, sanitized, and a reason", rj)
				}
			}
			assertRollupEqualsLog(t, f, []string{"u"}, wantLog)
		})
	}
}

// refusingSink refuses, for a reason a retry cannot fix, every log insert that holds one of
// the marked request ids, as a database refusing one document of a batch would.
type refusingSink struct {
	sink
	bad map[string]bool
	mu  sync.Mutex
	n   int // inserts tried
}

func (s *refusingSink) insertLog(ctx context.Context, recs []Record) error {
	s.mu.Lock()
	s.n++
	s.mu.Unlock()
	for _, r := range recs {
		if s.bad[r.RequestID] {
			return mongo.CommandError{Code: 2, Message: "document refused"}
		}
	}
	return s.sink.insertLog(ctx, recs)
}

// Ensure a batch the database refuses is split until the refused records are alone: they are
// set aside, the rest of the batch is written and counted, and nothing is retried forever.
func TestRecorder_RefusedBatchIsBisected(t *testing.T) {
	t.Parallel()
	f := newFixture(t, RecorderOptions{BatchSize: 64, FlushInterval: time.Hour})
	bad := map[string]bool{}
	batch := make([]Record, 64)
	for i := range batch {
		batch[i] = rec(i, "u", "anthropic", "claude", day0)
		if i == 5 || i == 40 {
			bad[batch[i].RequestID] = true
		}
	}
	rs := &refusingSink{sink: f.sink, bad: bad}
	f.svc.rec.sink = rs
	f.svc.rec.flush(batch)
	if err := f.svc.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	assertRollupEqualsLog(t, f, []string{"u"}, 62)
	if got := f.svc.RecorderState().Rejected; got != 2 {
		t.Fatalf("rejected = %d, want 2", got)
	}
	if rs.n > 2*2*7+1 { // two bad records: at most two paths of log2(64)+1 splits
		t.Fatalf("%d inserts for one batch with two bad records", rs.n)
	}
}

// refusingRollupSink refuses, for a reason a retry cannot fix, every rollup update that
// holds a cell of the marked model.
type refusingRollupSink struct {
	sink
	bad string
}

func (s *refusingRollupSink) addDaily(ctx context.Context, d *dailyDelta) error {
	for _, m := range d.models {
		if m.Model == s.bad {
			return mongo.CommandError{Code: 2, Message: "update refused"}
		}
	}
	return s.sink.addDaily(ctx, d)
}

// Ensure a rollup update the database refuses is split by cell: the other models' totals are
// written, the refused cell is skipped (its records stay in the log) without stopping the
// recorder, and `app usage reconcile` brings the rollup back to the log.
func TestRecorder_RefusedRollupCellIsSkipped(t *testing.T) {
	t.Parallel()
	f := newFixture(t, RecorderOptions{BatchSize: 64, FlushInterval: time.Hour})
	models := []string{"a", "b", "bad", "c", "d"}
	batch := make([]Record, 40)
	for i := range batch {
		batch[i] = rec(i, "u", "openai", models[i%len(models)], day0)
	}
	f.svc.rec.sink = &refusingRollupSink{sink: f.sink, bad: "bad"}
	f.svc.rec.flush(batch)
	if err := f.svc.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	logs, rolls := logTotals(t, f.db), rollupTotals(t, f.svc, []string{"u"})
	if len(logs) != len(models) {
		t.Fatalf("the log holds %d models, want all %d", len(logs), len(models))
	}
	for k, l := range logs {
		r, ok := rolls[k]
		if k == "u|openai|bad" {
			if ok && r.RequestCount != 0 {
				t.Errorf("the refused cell was counted: %+v", r)
			}
			continue
		}
		if !ok || r.RequestCount != l.RequestCount || r.TotalTokens != l.TotalTokens {
			t.Errorf("%s: rollup %+v, log %+v", k, r, l)
		}
	}
	if _, err := f.svc.Reconcile(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	assertRollupEqualsLog(t, f, []string{"u"}, 40)
}

// blockedSink fails every write with a transient error until released.
type blockedSink struct {
	sink
	down chan struct{}
}

func (s *blockedSink) insertLog(ctx context.Context, recs []Record) error {
	select {
	case <-s.down:
		return s.sink.insertLog(ctx, recs)
	default:
		return errDown
	}
}

// rejectCounter counts the records the recorder reports rejected.
type rejectCounter struct {
	nopObserver
	n atomic.Int64
}

func (c *rejectCounter) UsageRecordsRejected(n int) { c.n.Add(int64(n)) }

// Ensure a full queue never hangs Record: past the hand-off deadline records go to the
// overflow (health degraded), and once that is full Record answers ErrFull, Admit refuses new
// calls with Unavailable and the state says refusing. When the store is back, everything
// accepted is written, the overflow first.
func TestRecorder_FullQueueNeverHangs(t *testing.T) {
	t.Parallel()
	obs := &rejectCounter{}
	f := newFixture(t, RecorderOptions{QueueSize: 2, BatchSize: 1, OverflowSize: 3,
		HandoffTimeout: time.Millisecond, FlushInterval: time.Millisecond, Observer: obs})
	bs := &blockedSink{sink: f.sink, down: make(chan struct{})}
	f.svc.rec.sink = bs
	ctx := context.Background()
	accepted := 0
	var full error
	for i := range 20 {
		err := f.svc.Record(ctx, rec(i, "u", "openai", "m", day0))
		if err == nil {
			accepted++
			continue
		}
		full = err
		break
	}
	if !errors.Is(full, ErrFull) {
		t.Fatalf("Record on a full queue and overflow: err = %v, want ErrFull", full)
	}
	if n := obs.n.Load(); n != 1 {
		t.Fatalf("%d records counted as rejected, want the 1 refused", n)
	}
	if err := f.svc.Admit(); apperr.KindOf(err) != apperr.Unavailable {
		t.Fatalf("Admit = %v, want Unavailable", err)
	}
	if st := f.svc.RecorderState(); st.Status != StateRefusing || st.Overflow != 3 {
		t.Fatalf("state = %+v, want refusing with 3 in the overflow", st)
	}
	close(bs.down)
	if err := f.svc.Close(ctx); err != nil {
		t.Fatal(err)
	}
	assertRollupEqualsLog(t, f, []string{"u"}, int64(accepted))
	if err := f.svc.Admit(); err != nil {
		t.Fatalf("Admit after recovery = %v", err)
	}
	if st := f.svc.RecorderState(); st.Status != StateOK {
		t.Fatalf("state after recovery = %+v, want ok", st)
	}
}

// Ensure reconcile repairs a rollup edited by hand (and one emptied, and one invented), reports
// what it changed, and changes nothing the second time.
func TestService_ReconcileRepairsRollup(t *testing.T) {
	t.Parallel()
	f := newFixture(t, RecorderOptions{})
	ctx := context.Background()
	yesterday := day0.AddDate(0, 0, -1)
	for i := range 30 {
		at := day0
		if i%3 == 0 {
			at = yesterday
		}
		if err := f.svc.Record(ctx, rec(i, "u", []string{"openai", "gemini"}[i%2], "m.1", at)); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.svc.Close(ctx); err != nil {
		t.Fatal(err)
	}
	want := rollupTotals(t, f.svc, []string{"u"})
	daily := f.db.Collection(DailyCollection)
	// Hand edits: a counter changed, a day removed, a user that never made a call.
	k := cellKey("openai", "m.1")
	if _, err := daily.UpdateOne(ctx, bson.D{{Key: "_id", Value: dailyID("u", Day(day0))}},
		bson.D{{Key: "$set", Value: bson.D{{Key: "m." + k + "|n", Value: 999}}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := daily.DeleteOne(ctx, bson.D{{Key: "_id", Value: dailyID("u", Day(yesterday))}}); err != nil {
		t.Fatal(err)
	}
	if _, err := daily.InsertOne(ctx, bson.D{{Key: "_id", Value: dailyID("ghost", Day(day0))}, {Key: "userId", Value: "ghost"},
		{Key: "day", Value: Day(day0)}, {Key: "m", Value: bson.D{{Key: "openai|x|n", Value: 5}}}}); err != nil {
		t.Fatal(err)
	}
	res, err := f.svc.Reconcile(ctx, 7)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Changes) != 3 {
		t.Fatalf("changes = %+v, want 3", res.Changes)
	}
	got := rollupTotals(t, f.svc, []string{"u", "ghost"})
	if len(got) != len(want) {
		t.Fatalf("after reconcile: %+v, want %+v", got, want)
	}
	for key, w := range want {
		if got[key] != w {
			t.Errorf("%s after reconcile: %+v, want %+v", key, got[key], w)
		}
	}
	again, err := f.svc.Reconcile(ctx, 7)
	if err != nil || len(again.Changes) != 0 {
		t.Fatalf("second reconcile changed %+v (%v), want nothing", again, err)
	}
	if _, err := f.svc.Reconcile(ctx, 0); apperr.KindOf(err) != apperr.Invalid {
		t.Fatalf("days 0: %v, want Invalid", err)
	}
}

// Ensure costs are rounded to 10 decimal places, as stored and summed.
func TestRoundCost(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want float64 }{
		{0.0000034999999999999995, 0.0000035},
		{0.1 + 0.2, 0.3},
		{1.23456789012345, 1.2345678901},
		{0, 0},
	}
	for _, tt := range tests {
		if got := RoundCost(tt.in); got != tt.want {
			t.Errorf("RoundCost(%v) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

// Ensure two recorders (two replicas, each with its own writer id) writing the same users and
// days at once count every call. On MongoDB (TEST_MONGODB_URI) each rollup update is one
// atomic update; on the embedded store of this process the store serializes them.
func TestRecorder_TwoReplicasCountEveryCall(t *testing.T) {
	t.Parallel()
	db := storetest.DB(t)
	ctx := context.Background()
	var svcs [2]*Service
	for i := range svcs {
		s := New(db, Options{Recorder: RecorderOptions{BatchSize: 7, FlushInterval: time.Millisecond}})
		svcs[i] = s
	}
	if svcs[0].rec.writer == svcs[1].rec.writer {
		t.Fatal("two recorders share a writer id")
	}
	const per = 200
	var wg sync.WaitGroup
	for i, s := range svcs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range per {
				r := rec(i*per+j, "u", "openai", []string{"a.b", "c"}[j%2], day0)
				if err := s.Record(ctx, r); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	for _, s := range svcs {
		if err := s.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
	svcs[0].now = func() time.Time { return day0 }
	assertRollupEqualsLog(t, &fixture{svc: svcs[0], db: db}, []string{"u"}, 2*per)
}

// Ensure a rollup of an earlier version (cells named by escaped provider and model, cost in
// USD) is still read, merged with new cells of the same model, and reconcile rewrites it.
func TestService_ReadsLegacyRollup(t *testing.T) {
	t.Parallel()
	f := newFixture(t, RecorderOptions{})
	ctx := context.Background()
	if _, err := f.db.Collection(DailyCollection).InsertOne(ctx, bson.D{{Key: "_id", Value: dailyID("u", Day(day0))},
		{Key: "userId", Value: "u"}, {Key: "day", Value: Day(day0)}, {Key: "m", Value: bson.D{
			{Key: "openai|gpt-4%2E1|n", Value: int64(2)}, {Key: "openai|gpt-4%2E1|t", Value: int64(30)},
			{Key: "openai|gpt-4%2E1|c", Value: 0.0000035}}}}); err != nil {
		t.Fatal(err)
	}
	if err := f.svc.Record(ctx, rec(1, "u", "openai", "gpt-4.1", day0)); err != nil {
		t.Fatal(err)
	}
	if err := f.svc.Close(ctx); err != nil {
		t.Fatal(err)
	}
	rows, err := f.svc.ByProvider(ctx, "u", 1)
	if err != nil || len(rows) != 1 || rows[0].Model != "gpt-4.1" || rows[0].RequestCount != 3 || rows[0].Cost != 0.0000055 {
		t.Fatalf("rows = %+v (%v), want one gpt-4.1 row with 3 requests and $0.0000055", rows, err)
	}
	res, err := f.svc.Reconcile(ctx, 1)
	if err != nil || len(res.Changes) != 1 {
		t.Fatalf("reconcile = %+v (%v), want the legacy document rewritten", res, err)
	}
}
