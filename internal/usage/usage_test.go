package usage

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo"

	"github.com/acme/app/internal/apperr"
	"github.com/acme/app/internal/store/storetest"
)

var day0 = time.Date(2026, 11, 21, 23, 59, 59, 0, time.UTC)

// fixedClock is a settable clock.
type fixedClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fixedClock) now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fixedClock) set(t time.Time) { c.mu.Lock(); c.t = t; c.mu.Unlock() }

// flakySink fails the first failLog log inserts and failDaily rollup updates, as a database
// that is down and then back would; and reports the first loseDaily rollup updates as failed
// after making them, as when the network loses the database's answer.
type flakySink struct {
	inner              sink
	failLog, failDaily atomic.Int64
	loseDaily          atomic.Int64
	always             atomic.Bool
	logCalls           atomic.Int64
}

// The failures a retry can fix, labelled as the driver labels network errors.
var (
	errDown = mongo.CommandError{Message: "database down", Labels: []string{"NetworkError"}}
	errLost = mongo.CommandError{Message: "connection reset before the answer", Labels: []string{"NetworkError"}}
)

func (f *flakySink) insertLog(ctx context.Context, recs []Record) error {
	f.logCalls.Add(1)
	if f.always.Load() || f.failLog.Add(-1) >= 0 {
		return errDown
	}
	return f.inner.insertLog(ctx, recs)
}

func (f *flakySink) reject(ctx context.Context, r rejection) error { return f.inner.reject(ctx, r) }

func (f *flakySink) addDaily(ctx context.Context, d *dailyDelta) error {
	if f.always.Load() || f.failDaily.Add(-1) >= 0 {
		return errDown
	}
	if f.loseDaily.Add(-1) >= 0 {
		if err := f.inner.addDaily(ctx, d); err != nil {
			return err
		}
		return errLost
	}
	return f.inner.addDaily(ctx, d)
}

type fixture struct {
	svc   *Service
	db    *mongo.Database
	clock *fixedClock
	sink  *flakySink
}

func newFixture(t *testing.T, ro RecorderOptions) *fixture {
	t.Helper()
	return newFixtureOn(t, storetest.DB(t), ro)
}

// newFixtureOn is newFixture on a database of the caller's (a client with a command monitor).
func newFixtureOn(t *testing.T, db *mongo.Database, ro RecorderOptions) *fixture {
	t.Helper()
	clock := &fixedClock{t: day0}
	svc := newService(db, Options{Now: clock.now})
	if err := svc.EnsureIndexes(context.Background()); err != nil {
		t.Fatal(err)
	}
	fs := &flakySink{inner: svc.sink()}
	if ro.RetryMin == 0 {
		ro.RetryMin, ro.RetryMax = time.Millisecond, 5*time.Millisecond
	}
	svc.rec = newRecorder(fs, ro, svc.log)
	return &fixture{svc: svc, db: db, clock: clock, sink: fs}
}

func rec(i int, user, provider, model string, at time.Time) Record {
	return Record{
		RequestID: fmt.Sprintf("req-%s-%06d", user, i), UserID: user, Provider: provider, Model: model,
		Status: StatusSuccess, UpstreamStatus: 200, PromptTokens: int64(10 + i%7), CompletionTokens: int64(5 + i%3),
		TotalTokens: int64(15 + i%7 + i%3), Cost: float64(i%5+1) * 1e-6, CreatedAt: at,
	}
}

// logTotals sums the raw log's successes per user|provider|model.
func logTotals(t *testing.T, db *mongo.Database) map[string]ProviderUsage {
	t.Helper()
	cur, err := db.Collection(RequestsCollection).Find(context.Background(), bson.D{{Key: "status", Value: StatusSuccess}})
	if err != nil {
		t.Fatal(err)
	}
	var recs []Record
	if err := cur.All(context.Background(), &recs); err != nil {
		t.Fatal(err)
	}
	out := map[string]ProviderUsage{}
	for _, r := range recs {
		k := r.UserID + "|" + r.Provider + "|" + r.Model
		p := out[k]
		p.Provider, p.Model = r.Provider, r.Model
		p.RequestCount++
		p.TotalTokens += r.TotalTokens
		p.Cost += r.Cost
		out[k] = p
	}
	return out
}

// rollupTotals reads the rollup per user|provider|model through the service.
func rollupTotals(t *testing.T, svc *Service, users []string) map[string]ProviderUsage {
	t.Helper()
	out := map[string]ProviderUsage{}
	for _, u := range users {
		rows, err := svc.ByProvider(context.Background(), u, MaxDays)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			out[u+"|"+r.Provider+"|"+r.Model] = r
		}
	}
	return out
}

func assertRollupEqualsLog(t *testing.T, f *fixture, users []string, wantRequests int64) {
	t.Helper()
	logs, rolls := logTotals(t, f.db), rollupTotals(t, f.svc, users)
	if len(logs) != len(rolls) {
		t.Fatalf("log has %d provider/model keys, rollup %d", len(logs), len(rolls))
	}
	var n int64
	for k, l := range logs {
		r := rolls[k]
		if r.RequestCount != l.RequestCount || r.TotalTokens != l.TotalTokens || math.Abs(r.Cost-l.Cost) > 1e-12 {
			t.Errorf("%s: rollup %+v, log %+v", k, r, l)
		}
		n += l.RequestCount
	}
	if n != wantRequests {
		t.Errorf("log holds %d successful requests, want %d", n, wantRequests)
	}
	assertMonthlyEqualsLog(t, f.db)
}

// assertMonthlyEqualsLog checks that the monthly documents hold each user-day's totals of the
// log's successful requests, exactly.
func assertMonthlyEqualsLog(t *testing.T, db *mongo.Database) {
	t.Helper()
	ctx := context.Background()
	cur, err := db.Collection(RequestsCollection).Find(ctx, bson.D{{Key: "status", Value: StatusSuccess}})
	if err != nil {
		t.Fatal(err)
	}
	var recs []Record
	if err := cur.All(ctx, &recs); err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{} // "user|YYYY-MM|DD|field"
	for _, r := range recs {
		day := Day(r.CreatedAt)
		p := monthlyID(r.UserID, day) + "|" + day[8:] + "|"
		want[p+fieldRequests]++
		want[p+fieldTokens] += r.TotalTokens
		want[p+fieldCost] += costUnits(r.Cost)
	}
	mc, err := db.Collection(MonthlyCollection).Find(ctx, bson.D{{Key: "month", Value: bson.D{{Key: "$exists", Value: true}}}})
	if err != nil {
		t.Fatal(err)
	}
	var docs []struct {
		ID string           `bson:"_id"`
		D  map[string]int64 `bson:"d"`
	}
	if err := mc.All(ctx, &docs); err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for _, d := range docs {
		for k, v := range d.D {
			if v != 0 {
				got[d.ID+"|"+k] = v
			}
		}
	}
	for k, w := range want {
		if k[len(k)-1:] == fieldCost && math.Abs(float64(got[k]-w)) <= float64(len(recs)) {
			continue // each record's cost is rounded to units on its own in the log's sum
		}
		if got[k] != w {
			t.Errorf("monthly %s = %d, log %d", k, got[k], w)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("monthly %s = %d, the log has none", k, got[k])
		}
	}
}

// Ensure a shutdown under load writes every record, with a queue small enough to push back.
func TestRecorder_CloseFlushesEverything(t *testing.T) {
	t.Parallel()
	f := newFixture(t, RecorderOptions{QueueSize: 16, BatchSize: 50, FlushInterval: time.Hour})
	users := []string{"u1", "u2", "u3"}
	const perUser = 400
	var wg sync.WaitGroup
	for _, u := range users {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perUser {
				model := []string{"gpt-4o-mini", "gpt-4.1-nano"}[i%2]
				if err := f.svc.Record(context.Background(), rec(i, u, "openai", model, day0)); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := f.svc.Close(context.Background()); err != nil {
		t.Fatalf("Close: %v", err)
	}
	n, err := f.db.Collection(RequestsCollection).CountDocuments(context.Background(), bson.D{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := n, int64(len(users)*perUser); got != want {
		t.Fatalf("ai_requests holds %d documents, want %d", got, want)
	}
	assertRollupEqualsLog(t, f, users, int64(len(users)*perUser))
	if err := f.svc.Record(context.Background(), rec(0, "u1", "openai", "x", day0)); !errors.Is(err, ErrClosed) {
		t.Fatalf("Record after Close: err=%v, want ErrClosed", err)
	}
}

// Ensure a database that fails and comes back loses nothing and counts nothing twice.
func TestRecorder_DatabaseDownThenBack(t *testing.T) {
	t.Parallel()
	f := newFixture(t, RecorderOptions{BatchSize: 20, FlushInterval: 5 * time.Millisecond})
	f.sink.failLog.Store(5)
	f.sink.failDaily.Store(7)
	const n = 200
	for i := range n {
		r := rec(i, "u1", []string{"openai", "anthropic", "gemini"}[i%3], "m", day0.Add(time.Duration(i)*time.Second))
		if i%10 == 0 {
			r.Status, r.UpstreamStatus, r.Error = StatusError, 500, "upstream failed" // logged, not rolled up
		}
		if err := f.svc.Record(context.Background(), r); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.svc.Close(context.Background()); err != nil {
		t.Fatalf("Close: %v", err)
	}
	f.clock.set(day0.Add(time.Hour))
	if f.sink.logCalls.Load() <= 5 {
		t.Fatalf("the sink saw %d log inserts: the failures were not exercised", f.sink.logCalls.Load())
	}
	total, _ := f.db.Collection(RequestsCollection).CountDocuments(context.Background(), bson.D{})
	if total != n {
		t.Fatalf("ai_requests holds %d documents, want %d", total, n)
	}
	assertRollupEqualsLog(t, f, []string{"u1"}, n-n/10)
}

// Ensure a rollup update the database made but whose answer was lost is not counted again
// when the recorder re-sends it.
func TestRecorder_LostAnswerCountedOnce(t *testing.T) {
	t.Parallel()
	f := newFixture(t, RecorderOptions{BatchSize: 20, FlushInterval: 5 * time.Millisecond})
	f.sink.loseDaily.Store(6)
	const n = 120
	for i := range n {
		r := rec(i, []string{"u1", "u2"}[i%2], []string{"openai", "gemini"}[i%2], "m", day0.Add(time.Duration(i)*time.Minute))
		if err := f.svc.Record(context.Background(), r); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.svc.Close(context.Background()); err != nil {
		t.Fatalf("Close: %v", err)
	}
	f.clock.set(day0.Add(3 * time.Hour))
	if left := f.sink.loseDaily.Load(); left > 0 {
		t.Fatalf("%d lost answers were not exercised", left)
	}
	assertRollupEqualsLog(t, f, []string{"u1", "u2"}, n)
}

// Ensure rollup updates from two recorders (two processes) both count, each once: the batch
// mark of one does not hide the other's, and a re-sent batch is taken once.
func TestMongoSink_WritersCountOnce(t *testing.T) {
	t.Parallel()
	f := newFixture(t, RecorderOptions{})
	defer f.svc.Close(context.Background())
	s := f.svc.sink()
	delta := func(writer string, seq int64, resent bool) *dailyDelta {
		d := rollup([]Record{rec(1, "u", "openai", "m", day0)})[0]
		d.writer, d.seq, d.resent = writer, seq, resent
		return d
	}
	steps := []struct {
		writer string
		seq    int64
		resent bool
		want   int64 // requests counted after the step
	}{
		{"a", 1, false, 1},
		{"b", 1, true, 2}, // another recorder's batch, re-sent after a failure that was not applied
		{"a", 1, true, 2}, // re-sent after a lost answer: already taken
		{"b", 1, true, 2},
		{"a", 2, false, 3},
		{"a", 2, true, 3},
		{"b", 2, false, 4},
	}
	for i, st := range steps {
		if err := s.addDaily(context.Background(), delta(st.writer, st.seq, st.resent)); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		rows, err := f.svc.ByProvider(context.Background(), "u", 1)
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != 1 || rows[0].RequestCount != st.want {
			t.Fatalf("step %d (%s, batch %d): rollup %+v, want %d requests", i, st.writer, st.seq, rows, st.want)
		}
	}
}

// Ensure a batch rewritten after a lost answer is stored once (ids are the request ids).
func TestRecorder_DuplicateInsertIsNotAnError(t *testing.T) {
	t.Parallel()
	f := newFixture(t, RecorderOptions{})
	s := f.svc.sink()
	batch := []Record{rec(1, "u", "openai", "m", day0), rec(2, "u", "openai", "m", day0)}
	if err := s.insertLog(context.Background(), batch[:1]); err != nil {
		t.Fatal(err)
	}
	if err := s.insertLog(context.Background(), batch); err != nil {
		t.Fatalf("re-insert: %v", err)
	}
	n, _ := f.db.Collection(RequestsCollection).CountDocuments(context.Background(), bson.D{})
	if n != 2 {
		t.Fatalf("%d documents, want 2", n)
	}
	_ = f.svc.Close(context.Background())
}

// Ensure Close reports the records it could not write when its deadline passes.
func TestRecorder_CloseDeadlineReportsLoss(t *testing.T) {
	t.Parallel()
	f := newFixture(t, RecorderOptions{FlushInterval: time.Millisecond})
	f.sink.always.Store(true)
	for i := range 3 {
		if err := f.svc.Record(context.Background(), rec(i, "u", "openai", "m", day0)); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	err := f.svc.Close(ctx)
	if err == nil {
		t.Fatal("Close with a dead database returned nil")
	}
}

// Ensure the window is the last N UTC calendar days, today included, across midnight.
func TestService_WindowAcrossUTCMidnight(t *testing.T) {
	t.Parallel()
	f := newFixture(t, RecorderOptions{})
	before := time.Date(2026, 11, 21, 23, 59, 59, 0, time.UTC)
	after := time.Date(2026, 11, 22, 0, 0, 1, 0, time.UTC)
	older := time.Date(2026, 10, 23, 12, 0, 0, 0, time.UTC) // outside the 30 days ending 2026-11-22, inside 31
	for i, at := range []time.Time{before, after, after, older} {
		if err := f.svc.Record(context.Background(), rec(i, "u", "openai", "m", at)); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.svc.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		now  time.Time
		days int
		want int64
	}{
		{"OneDayJustBeforeMidnight", before, 1, 1},
		{"OneDayJustAfterMidnight", after.Add(29 * time.Second), 1, 2},
		{"TwoDaysAfterMidnight", after, 2, 3},
		{"ThirtyDays", after, 30, 3},
		{"ThirtyOneDays", after, 31, 4},
		{"LocalTimezoneClockIsUTCNormalised", after.In(time.FixedZone("X", -5*3600)), 1, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f.clock.set(tt.now)
			got, err := f.svc.Summary(context.Background(), "u", tt.days)
			if err != nil {
				t.Fatal(err)
			}
			if got.TotalRequests != tt.want {
				t.Fatalf("totalRequests=%d, want %d", got.TotalRequests, tt.want)
			}
		})
	}
}

// Ensure per-provider rows are per caller, largest cost first, and the report has totals.
func TestService_ByProviderAndReport(t *testing.T) {
	t.Parallel()
	f := newFixture(t, RecorderOptions{})
	add := func(user, provider, model string, cost float64, n int) {
		for i := range n {
			r := rec(i, user+provider+model, provider, model, day0)
			r.UserID, r.Cost, r.TotalTokens = user, cost, 10
			if err := f.svc.Record(context.Background(), r); err != nil {
				t.Fatal(err)
			}
		}
	}
	add("a", "openai", "gpt-4o-mini", 0.001, 3)
	add("a", "anthropic", "claude-haiku-4-5", 0.01, 1)
	add("a", "gemini", "gemini-2.5-flash", 0.0001, 2)
	add("b", "openai", "gpt-4o-mini", 1, 5)
	if err := f.svc.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	rows, err := f.svc.ByProvider(context.Background(), "a", 30)
	if err != nil {
		t.Fatal(err)
	}
	want := []ProviderUsage{
		{Provider: "anthropic", Model: "claude-haiku-4-5", RequestCount: 1, TotalTokens: 10, Cost: 0.01},
		{Provider: "openai", Model: "gpt-4o-mini", RequestCount: 3, TotalTokens: 30, Cost: 0.003},
		{Provider: "gemini", Model: "gemini-2.5-flash", RequestCount: 2, TotalTokens: 20, Cost: 0.0002},
	}
	if len(rows) != len(want) {
		t.Fatalf("rows=%+v, want %+v", rows, want)
	}
	for i := range want {
		g, w := rows[i], want[i]
		if g.Provider != w.Provider || g.Model != w.Model || g.RequestCount != w.RequestCount ||
			g.TotalTokens != w.TotalTokens || math.Abs(g.Cost-w.Cost) > 1e-12 {
			t.Errorf("row %d = %+v, want %+v", i, g, w)
		}
	}
	rep, err := f.svc.Report(context.Background(), ReportOptions{Days: 7})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := rep.Totals.TotalRequests, int64(11); got != want {
		t.Fatalf("report totalRequests=%d, want %d", got, want)
	}
	if rep.Rows[0].Provider != "openai" || rep.Rows[0].RequestCount != 8 {
		t.Fatalf("report first row %+v, want openai with 8 requests", rep.Rows[0])
	}
	if rep.From != "2026-11-15" || rep.To != "2026-11-21" {
		t.Fatalf("report window %s..%s", rep.From, rep.To)
	}
	// Cost by user: every user (nil), the ones named, none (an empty list).
	day := Day(day0)
	for _, tc := range []struct {
		users []string
		want  map[string]float64
	}{
		{nil, map[string]float64{"a": 0.0132, "b": 5}},
		{[]string{"b", "nobody"}, map[string]float64{"b": 5}},
		{[]string{}, map[string]float64{}},
	} {
		got, err := f.svc.CostByUser(context.Background(), tc.users, day, day)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(tc.want) {
			t.Fatalf("CostByUser(%v) = %v, want %v", tc.users, got, tc.want)
		}
		for u, w := range tc.want {
			if math.Abs(got[u]-w) > 1e-12 {
				t.Fatalf("CostByUser(%v) = %v, want %v", tc.users, got, tc.want)
			}
		}
	}
}

// Ensure days is a whole number from 1 to 366, defaulting to 30.
func TestParseDays(t *testing.T) {
	t.Parallel()
	tests := []struct {
		raw     string
		want    int
		wantMsg string
	}{
		{"", 30, ""},
		{"1", 1, ""},
		{"366", 366, ""},
		{"7.0", 7, ""},
		{"0", 0, "days must not be less than 1"},
		{"-3", 0, "days must not be less than 1"},
		{"367", 0, "days must not be greater than 366"},
		{"abc", 0, "days must be an integer number"},
		{"1.5", 0, "days must be an integer number"},
		{"1e9", 0, "days must be an integer number"},
	}
	for _, tt := range tests {
		t.Run(tt.raw, func(t *testing.T) {
			got, err := ParseDays(tt.raw)
			if tt.wantMsg == "" {
				if err != nil || got != tt.want {
					t.Fatalf("ParseDays(%q)=%d,%v want %d", tt.raw, got, err, tt.want)
				}
				return
			}
			e := apperr.As(err)
			if e == nil || e.Kind != apperr.Invalid || len(e.Messages) != 1 || e.Messages[0] != tt.wantMsg {
				t.Fatalf("ParseDays(%q) err=%v, want %q", tt.raw, err, tt.wantMsg)
			}
		})
	}
}

// Ensure the unit prices of a record are stored once, under the reference the record holds.
func TestRecord_PricesStored(t *testing.T) {
	t.Parallel()
	f := newFixture(t, RecorderOptions{})
	r := rec(1, "u", "openai", "m", day0)
	r.Prices = &UnitPrices{Entry: "m", Input: 1e-7}
	if err := f.svc.Record(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	if err := f.svc.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	var back Record
	if err := f.db.Collection(RequestsCollection).FindOne(context.Background(), bson.D{{Key: "_id", Value: r.RequestID}}).Decode(&back); err != nil {
		t.Fatal(err)
	}
	var prices UnitPrices
	if err := f.db.Collection(PricesCollection).FindOne(context.Background(), bson.D{{Key: "_id", Value: back.PriceRef}}).Decode(&prices); err != nil {
		t.Fatalf("prices %q of the record: %v", back.PriceRef, err)
	}
	if prices != *r.Prices {
		t.Fatalf("read back %+v, want %+v", prices, *r.Prices)
	}
}
