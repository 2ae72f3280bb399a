package usage

import (
	"context"
	"math"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/bson"

	"github.com/acme/app/internal/apperr"
)

// Ensure Daily answers one entry per UTC day of the window, oldest first, zeros on days
// without calls, only the caller's calls, and entries that sum to Summary.
func TestService_Daily(t *testing.T) {
	t.Parallel()
	f := newFixture(t, RecorderOptions{})
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	f.clock.set(now)
	calls := []struct {
		user     string
		provider string
		at       time.Time
	}{
		{"u", "openai", now},
		{"u", "anthropic", now.Add(-time.Hour)},
		{"u", "gemini", time.Date(2026, 11, 20, 23, 59, 59, 0, time.UTC)},
		{"u", "openai", time.Date(2026, 11, 16, 0, 0, 0, 0, time.UTC)},  // first day of 7
		{"u", "openai", time.Date(2026, 11, 15, 23, 0, 0, 0, time.UTC)}, // outside 7 days
		{"other", "openai", now},
	}
	for i, c := range calls {
		if err := f.svc.Record(context.Background(), rec(i, c.user, c.provider, "m", c.at)); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.svc.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		days      int
		first     string
		requests  map[string]int64 // by date; other days zero
		wantTotal int64
	}{
		{"OneDay", 1, "2026-11-22", map[string]int64{"2026-11-22": 2}, 2},
		{"SevenDays", 7, "2026-11-16", map[string]int64{"2026-11-22": 2, "2026-11-20": 1, "2026-11-16": 1}, 4},
		{"ThirtyDays", 30, "2026-10-24", map[string]int64{"2026-11-22": 2, "2026-11-20": 1, "2026-11-16": 1, "2026-11-15": 1}, 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := f.svc.Daily(context.Background(), "u", tt.days)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != tt.days {
				t.Fatalf("%d entries, want %d", len(got), tt.days)
			}
			if got[0].Date != tt.first || got[len(got)-1].Date != "2026-11-22" {
				t.Fatalf("window %s..%s, want %s..2026-11-22", got[0].Date, got[len(got)-1].Date, tt.first)
			}
			var sum Summary
			for i, d := range got {
				if i > 0 && d.Date <= got[i-1].Date {
					t.Fatalf("entry %d (%s) not after %s", i, d.Date, got[i-1].Date)
				}
				if d.Requests != tt.requests[d.Date] {
					t.Errorf("%s: %d requests, want %d", d.Date, d.Requests, tt.requests[d.Date])
				}
				if d.Requests == 0 && (d.Tokens != 0 || d.Cost != 0) {
					t.Errorf("%s: no requests but %+v", d.Date, d)
				}
				sum.TotalRequests += d.Requests
				sum.TotalTokens += d.Tokens
				sum.TotalCost += d.Cost
			}
			want, err := f.svc.Summary(context.Background(), "u", tt.days)
			if err != nil {
				t.Fatal(err)
			}
			if sum.TotalRequests != tt.wantTotal || sum.TotalRequests != want.TotalRequests ||
				sum.TotalTokens != want.TotalTokens || math.Abs(sum.TotalCost-want.TotalCost) > 1e-9 {
				t.Fatalf("entries sum to %+v, Summary is %+v (want %d requests)", sum, want, tt.wantTotal)
			}
		})
	}
}

// Ensure Daily refuses a window outside 1..366 days as Invalid.
func TestService_DailyRefusesBadDays(t *testing.T) {
	t.Parallel()
	f := newFixture(t, RecorderOptions{})
	for _, days := range []int{0, -1, MaxDays + 1} {
		if _, err := f.svc.Daily(context.Background(), "u", days); apperr.KindOf(err) != apperr.Invalid {
			t.Errorf("days=%d: %v, want Invalid", days, err)
		}
	}
}

// Ensure a day kept in memory is read anew once this process records a late call on it, and
// after Reconcile.
func TestService_DailySettledDayChanges(t *testing.T) {
	t.Parallel()
	f := newFixture(t, RecorderOptions{FlushInterval: time.Millisecond})
	f.clock.set(time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC))
	settled := time.Date(2026, 11, 17, 12, 0, 0, 0, time.UTC) // five days back
	ctx := context.Background()
	waitFor := func(requests int64) { t.Helper(); waitRecorded(t, f.svc, "u", 7, requests) }
	dayOf := func() int64 {
		t.Helper()
		days, err := f.svc.Daily(ctx, "u", 7)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range days {
			if d.Date == "2026-11-17" {
				return d.Requests
			}
		}
		t.Fatal("no entry for 2026-11-17")
		return 0
	}
	if err := f.svc.Record(ctx, rec(1, "u", "openai", "m", settled)); err != nil {
		t.Fatal(err)
	}
	waitFor(1)
	if got := dayOf(); got != 1 {
		t.Fatalf("first read: %d requests on the settled day, want 1", got)
	}
	if err := f.svc.Record(ctx, rec(2, "u", "openai", "m", settled)); err != nil {
		t.Fatal(err)
	}
	waitFor(2)
	if got := dayOf(); got != 2 {
		t.Fatalf("after a late call: %d requests on the settled day, want 2", got)
	}
	// A call in the log that the rollup lacks (written behind the recorder's back) shows once
	// Reconcile has rebuilt the day.
	if err := f.svc.sink().insertLog(ctx, []Record{rec(3, "u", "openai", "m", settled)}); err != nil {
		t.Fatal(err)
	}
	if got := dayOf(); got != 2 {
		t.Fatalf("kept in memory: %d, want 2", got)
	}
	if _, err := f.svc.Reconcile(ctx, 7); err != nil {
		t.Fatal(err)
	}
	if got := dayOf(); got != 3 {
		t.Fatalf("after Reconcile rebuilt the day from the log: %d, want 3", got)
	}
}

// Ensure Daily reads the days after the monthly documents' first day from them, and that day
// and earlier ones from the rollup: with each source taken away in turn, the days it answers
// are gone and the others stay.
func TestService_DailyFromMonths(t *testing.T) {
	t.Parallel()
	f := newFixture(t, RecorderOptions{FlushInterval: time.Millisecond})
	ctx := context.Background()
	at := func(day, hour int) time.Time { return time.Date(2026, 11, day, hour, 0, 0, 0, time.UTC) }
	record := func(i int, when time.Time) {
		t.Helper()
		if err := f.svc.Record(ctx, rec(i, "u", []string{"openai", "gemini"}[i%2], "m", when)); err != nil {
			t.Fatal(err)
		}
	}
	waitFor := func(requests int64) { t.Helper(); waitRecorded(t, f.svc, "u", 30, requests) }
	// The recorder first writes on 11-10: the monthly documents hold every call from 11-11 on.
	f.clock.set(at(10, 9))
	record(1, at(10, 8))
	record(2, at(5, 8)) // a late call on a day before
	waitFor(2)
	f.clock.set(at(22, 10))
	for i, when := range []time.Time{at(11, 0), at(20, 1), at(20, 23), at(22, 9), at(1, 0)} {
		record(10+i, when)
	}
	waitFor(7)
	if err := f.svc.Close(ctx); err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{"2026-11-01": 1, "2026-11-05": 1, "2026-11-10": 1, "2026-11-11": 1, "2026-11-20": 2, "2026-11-22": 1}
	check := func(label string, want map[string]int64) {
		t.Helper()
		f.svc.settled.Purge()
		days, err := f.svc.Daily(ctx, "u", 30)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range days {
			if d.Requests != want[d.Date] {
				t.Errorf("%s: %s has %d requests, want %d", label, d.Date, d.Requests, want[d.Date])
			}
		}
	}
	check("both sources", want)

	rollupOf := func(days ...int) []string {
		var ids []string
		for _, d := range days {
			ids = append(ids, dailyID("u", Day(at(d, 0))))
		}
		return ids
	}
	if _, err := f.db.Collection(DailyCollection).DeleteMany(ctx, bson.D{{Key: "_id", Value: bson.D{
		{Key: "$in", Value: rollupOf(11, 20, 22)}}}}); err != nil {
		t.Fatal(err)
	}
	check("without the rollup of the days after 11-10", want)

	if _, err := f.db.Collection(MonthlyCollection).DeleteMany(ctx, bson.D{{Key: "month", Value: "2026-11"}}); err != nil {
		t.Fatal(err)
	}
	check("without the monthly document too", map[string]int64{"2026-11-01": 1, "2026-11-05": 1, "2026-11-10": 1})
}

// Ensure Reconcile rebuilds the monthly documents' days of its window from the log (adding
// what they lack, removing what the log does not have, leaving days outside the window) and
// moves their first day back to the day before the window, so that Daily then reads the whole
// window from them.
func TestService_ReconcileRebuildsMonths(t *testing.T) {
	t.Parallel()
	f := newFixture(t, RecorderOptions{FlushInterval: time.Millisecond})
	ctx := context.Background()
	at := func(month time.Month, day int) time.Time { return time.Date(2026, month, day, 12, 0, 0, 0, time.UTC) }
	f.clock.set(at(11, 22))
	// One call through the recorder (its first write: the monthly documents start on 11-22)
	// and calls in the log only, as after a crash or from a version before the monthly documents.
	if err := f.svc.Record(ctx, rec(1, "u", "openai", "m", at(11, 22))); err != nil {
		t.Fatal(err)
	}
	if err := f.svc.Close(ctx); err != nil {
		t.Fatal(err)
	}
	logOnly := []Record{rec(2, "u", "openai", "m", at(11, 3)), rec(3, "u", "gemini", "m", at(11, 3)),
		rec(4, "u", "openai", "m", at(10, 30)), rec(5, "u", "openai", "m", at(9, 1))} // 09-01: outside 30 days
	if err := f.svc.sink().insertLog(ctx, logOnly); err != nil {
		t.Fatal(err)
	}
	// A monthly cell the log does not back, inside the window, and one outside it.
	if _, err := f.db.Collection(MonthlyCollection).UpdateOne(ctx, bson.D{{Key: "_id", Value: "u|2026-11"}},
		bson.D{{Key: "$set", Value: bson.D{{Key: "d.07|n", Value: int64(99)}}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.db.Collection(MonthlyCollection).InsertOne(ctx, bson.D{{Key: "_id", Value: "u|2026-09"},
		{Key: "userId", Value: "u"}, {Key: "month", Value: "2026-09"}, {Key: "d", Value: bson.D{{Key: "02|n", Value: int64(5)}}}}); err != nil {
		t.Fatal(err)
	}

	if _, err := f.svc.Reconcile(ctx, 30); err != nil {
		t.Fatal(err)
	}
	var since struct {
		Day string `bson:"day"`
	}
	if err := f.db.Collection(MonthlyCollection).FindOne(ctx, bson.D{{Key: "_id", Value: sinceID}}).Decode(&since); err != nil || since.Day != "2026-10-23" {
		t.Fatalf("first day after Reconcile(30) = %q (%v), want 2026-10-23, the day before the window", since.Day, err)
	}
	// Daily now reads every day of the window from the monthly documents alone.
	if _, err := f.db.Collection(DailyCollection).DeleteMany(ctx, bson.D{}); err != nil {
		t.Fatal(err)
	}
	f.svc.settled.Purge()
	days, err := f.svc.Daily(ctx, "u", 30)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{"2026-10-30": 1, "2026-11-03": 2, "2026-11-22": 1}
	for _, d := range days {
		if d.Requests != want[d.Date] {
			t.Errorf("%s: %d requests, want %d", d.Date, d.Requests, want[d.Date])
		}
	}
	var sept struct {
		D map[string]int64 `bson:"d"`
	}
	if err := f.db.Collection(MonthlyCollection).FindOne(ctx, bson.D{{Key: "_id", Value: "u|2026-09"}}).Decode(&sept); err != nil || sept.D["02|n"] != 5 {
		t.Errorf("a day outside the window: %v (%v), want it left as it was", sept.D, err)
	}
}

// waitRecorded waits until user's Summary over days counts requests: the recorder writes
// behind Record.
func waitRecorded(t *testing.T, svc *Service, user string, days int, requests int64) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		s, err := svc.Summary(context.Background(), user, days)
		if err != nil {
			t.Fatal(err)
		}
		if s.TotalRequests == requests {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d requests recorded, want %d", s.TotalRequests, requests)
		}
	}
}

// A call that fails or is canceled after the provider reported usage is billed: budgets count
// its cost (CostByUser, BilledCost), usage reports do not (they sum answered calls), and
// Reconcile rebuilds it from the log like the rest.
func TestService_UnansweredCostIsBilled(t *testing.T) {
	t.Parallel()
	f := newFixture(t, RecorderOptions{FlushInterval: time.Millisecond})
	ctx := context.Background()
	today := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	f.clock.set(today)
	call := func(i int, user, status string, cost float64, at time.Time) Record {
		r := rec(i, user, "anthropic", "claude", at)
		r.Status, r.Cost = status, cost
		return r
	}
	recs := []Record{
		call(1, "u", StatusSuccess, 0.5, today),
		call(2, "u", StatusCanceled, 0.25, today),                 // a stream the client left: billed
		call(3, "u", StatusError, 0.125, today.AddDate(0, 0, -1)), // failed after usage came
		call(4, "u", StatusError, 0, today),                       // failed before any usage: nothing
		call(5, "v", StatusCanceled, 0.0625, today),               // v has no answered call at all
	}
	for _, r := range recs {
		if err := f.svc.Record(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.svc.Close(ctx); err != nil {
		t.Fatal(err)
	}

	check := func(when string) {
		t.Helper()
		sum, err := f.svc.Summary(ctx, "u", 7)
		if err != nil || sum.TotalRequests != 1 || sum.TotalCost != 0.5 {
			t.Errorf("%s: report %+v (%v), want the one answered call, $0.5", when, sum, err)
		}
		costs, err := f.svc.CostByUser(ctx, nil, "2026-11-01", "2026-11-22")
		if err != nil || len(costs) != 2 || costs["u"] != 0.875 || costs["v"] != 0.0625 {
			t.Errorf("%s: CostByUser = %v (%v), want u 0.875, v 0.0625", when, costs, err)
		}
		if c, err := f.svc.BilledCost(ctx, "u", 1); err != nil || c != 0.75 {
			t.Errorf("%s: BilledCost(u, today) = %v (%v), want 0.75", when, c, err)
		}
		if n, err := f.db.Collection(MonthlyCollection).CountDocuments(ctx, bson.D{{Key: "userId", Value: "v"}}); err != nil || n != 0 {
			t.Errorf("%s: %d monthly documents for a user without an answered call (%v), want none", when, n, err)
		}
	}
	check("recorded")

	// The rollup loses the unanswered costs (as after a crash between log and rollup): the
	// rebuild restores them and says so; a second rebuild finds nothing to change.
	if _, err := f.db.Collection(DailyCollection).UpdateMany(ctx, bson.D{},
		bson.D{{Key: "$unset", Value: bson.D{{Key: fieldUnanswered, Value: ""}}}}); err != nil {
		t.Fatal(err)
	}
	res, err := f.svc.Reconcile(ctx, 7)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Changes) != 3 {
		t.Fatalf("Reconcile changed %+v, want the 3 documents with unanswered costs", res.Changes)
	}
	for _, ch := range res.Changes {
		if ch.UnansweredBefore != 0 || ch.UnansweredAfter == 0 || ch.Before != ch.After {
			t.Errorf("change %+v: want only the unanswered cost restored", ch)
		}
	}
	check("reconciled")
	if res, err := f.svc.Reconcile(ctx, 7); err != nil || len(res.Changes) != 0 {
		t.Errorf("second Reconcile changed %+v (%v), want nothing", res, err)
	}
}
