package usage

import (
	"context"
	"math"
	"testing"
	"time"

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
	waitFor := func(requests int64) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for {
			s, err := f.svc.Summary(ctx, "u", 7)
			if err != nil {
				t.Fatal(err)
			}
			if s.TotalRequests == requests {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d requests recorded, want %d", s.TotalRequests, requests)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
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
