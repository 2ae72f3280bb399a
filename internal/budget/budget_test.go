package budget

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"strconv"
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

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

func newClock() *clock { return &clock{t: time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)} }

func newService(t *testing.T, db *mongo.Database, opts Options) *Service {
	t.Helper()
	s, err := New(context.Background(), db, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.EnsureIndexes(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	return s
}

// eachMode runs fn as a parallel subtest for each place budgets live: the store (replicas on
// MongoDB) and this process's memory (the owner of the embedded store).
func eachMode(t *testing.T, fn func(t *testing.T, inMemory bool)) {
	t.Helper()
	for _, mode := range []struct {
		name     string
		inMemory bool
	}{{"Store", false}, {"Memory", true}} {
		t.Run(mode.name, func(t *testing.T) {
			t.Parallel()
			fn(t, mode.inMemory)
		})
	}
}

func ptr(v float64) *float64 { return &v }

func near(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }

// Ensure a reservation counts until it settles, a settle counts once and exactly, a spent
// budget refuses with its reason, and a limit raised or cleared applies at once.
func TestReserveSettleStatus(t *testing.T) {
	t.Parallel()
	eachMode(t, func(t *testing.T, inMemory bool) {
		ctx := context.Background()
		clk := newClock()
		s := newService(t, storetest.DB(t), Options{Now: clk.now, InMemory: inMemory,
			Spent: func(_ context.Context, userID string, days int) (float64, error) {
				if userID != "u1" || days != 23 {
					return 0, fmt.Errorf("spent(%s, %d)", userID, days)
				}
				return 0.25, nil // recorded before the budget existed
			},
			Month: func(_ context.Context, from, to string) (map[string]float64, error) {
				if from != "2026-11-01" || to != "2026-11-23" {
					return nil, fmt.Errorf("month(%s, %s)", from, to)
				}
				return map[string]float64{"u1": 0.25}, nil
			}})
		if _, err := s.SetLimit(ctx, "u1", ptr(1)); err != nil {
			t.Fatal(err)
		}
		r, err := s.Reserve(ctx, "u1", 0.5)
		if err != nil {
			t.Fatal(err)
		}
		st, err := s.Status(ctx, "u1")
		if err != nil {
			t.Fatal(err)
		}
		if *st.Limit != 1 || st.Spent != 0.25 || st.Reserved != 0.5 || *st.Remaining != 0.25 ||
			!st.ResetsAt.Equal(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)) {
			t.Fatalf("status while reserved %+v", st)
		}
		// 0.25 left: a second call of worst case 0.5 is refused, with the reason (in memory,
		// once its caller stops waiting for the first to settle).
		short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		defer cancel()
		_, err = s.Reserve(short, "u1", 0.5)
		var ex *Exceeded
		if !errors.As(err, &ex) || !strings.Contains(err.Error(), "less than this call's worst case of $0.50") {
			t.Fatalf("second reserve: %v", err)
		}
		r.Settle(ctx, 0.75)
		r.Settle(ctx, 0.75) // counted once
		st, _ = s.Status(ctx, "u1")
		if st.Spent != 1 || st.Reserved != 0 || *st.Remaining != 0 {
			t.Fatalf("status after settle %+v", st)
		}
		_, err = s.Reserve(ctx, "u1", 0.0001)
		if e := apperr.As(err); e == nil || e.Kind != apperr.PaymentRequired ||
			e.Messages[0] != "Monthly AI budget of $1.00 reached; it resets on 2026-12-01" {
			t.Fatalf("reserve on a spent budget: %v", err)
		}
		// Raising the limit applies at once; clearing it lifts the budget.
		if st, err = s.SetLimit(ctx, "u1", ptr(2)); err != nil || *st.Remaining != 1 {
			t.Fatalf("raise: %+v %v", st, err)
		}
		if st, err = s.SetLimit(ctx, "u1", nil); err != nil || st.Limit != nil || st.Remaining != nil {
			t.Fatalf("clear: %+v %v", st, err)
		}
		for range 3 {
			if _, err := s.Reserve(ctx, "u1", 5); err != nil {
				t.Fatalf("reserve without a budget: %v", err)
			}
		}
		if _, err := s.SetLimit(ctx, "u1", ptr(-1)); apperr.KindOf(err) != apperr.Invalid {
			t.Fatalf("negative limit: %v", err)
		}
	})
}

// Ensure a call whose model has no price (worst case +Inf) is refused to a user with a
// budget, which could not bound it, and passes, holding nothing, for a user without one.
func TestUnpricedCall(t *testing.T) {
	t.Parallel()
	eachMode(t, func(t *testing.T, inMemory bool) {
		ctx := context.Background()
		s := newService(t, storetest.DB(t), Options{Now: newClock().now, InMemory: inMemory,
			Spent: func(context.Context, string, int) (float64, error) { return 0, nil },
			Month: func(context.Context, string, string) (map[string]float64, error) { return nil, nil }})
		if _, err := s.SetLimit(ctx, "limited", ptr(100)); err != nil {
			t.Fatal(err)
		}
		_, err := s.Reserve(ctx, "limited", math.Inf(1))
		if e := apperr.As(err); e == nil || e.Kind != apperr.Invalid || e.Param != "model" || e.Code != "model_not_priced" {
			t.Fatalf("unpriced call with a budget: %v", err)
		}
		if st, _ := s.Status(ctx, "limited"); st.Reserved != 0 {
			t.Fatalf("the refusal holds %v", st.Reserved)
		}
		if r, err := s.Reserve(ctx, "free", math.Inf(1)); err != nil {
			t.Fatalf("unpriced call without a budget: %v", err)
		} else if r != nil {
			r.Settle(ctx, 0)
		}
	})
}

// Ensure the default budget applies to users without their own, and a new month brings a new
// budget.
func TestDefaultBudgetAndNewMonth(t *testing.T) {
	t.Parallel()
	eachMode(t, func(t *testing.T, inMemory bool) {
		ctx := context.Background()
		clk := newClock()
		s := newService(t, storetest.DB(t), Options{Now: clk.now, Default: ptr(0.1), InMemory: inMemory})
		st, err := s.Status(ctx, "u2")
		if err != nil || st.Limit == nil || *st.Limit != 0.1 || *st.Remaining != 0.1 {
			t.Fatalf("default status %+v %v", st, err)
		}
		r, err := s.Reserve(ctx, "u2", 0.1)
		if err != nil {
			t.Fatal(err)
		}
		r.Settle(ctx, 0.1)
		if _, err := s.Reserve(ctx, "u2", 0.01); err == nil {
			t.Fatal("spent default budget accepted a call")
		}
		clk.add(8 * 24 * time.Hour) // December: a new month, a new budget
		if _, err := s.Reserve(ctx, "u2", 0.01); err != nil {
			t.Fatalf("new month: %v", err)
		}
	})
}

// Ensure a call that does not fit only because of the worst cases held by the user's calls in
// flight waits for them to settle and is then admitted, while one that could not fit even then
// is refused at once (budgets in memory).
func TestWaitsForCallsInFlight(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newService(t, storetest.DB(t), Options{InMemory: true})
	if _, err := s.SetLimit(ctx, "u", ptr(1)); err != nil {
		t.Fatal(err)
	}
	first, err := s.Reserve(ctx, "u", 0.6)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Reserve(ctx, "u", 1.5); apperr.KindOf(err) != apperr.PaymentRequired {
		t.Fatalf("a call over the whole budget: %v, want PaymentRequired at once", err)
	}
	admitted := make(chan error, 1)
	go func() {
		r, err := s.Reserve(ctx, "u", 0.6) // 0.4 left while the first holds 0.6
		if err == nil {
			r.Settle(ctx, 0.2)
		}
		admitted <- err
	}()
	select {
	case err := <-admitted:
		t.Fatalf("the second call did not wait for the first: %v", err)
	default:
	}
	first.Settle(ctx, 0.1)
	if err := <-admitted; err != nil {
		t.Fatalf("the second call after the first settled: %v", err)
	}
	if st, err := s.Status(ctx, "u"); err != nil || st.Spent != 0.3 || st.Reserved != 0 {
		t.Fatalf("status %+v %v, want spent 0.3 and nothing reserved", st, err)
	}
}

// Ensure amounts add up exactly: ten settlements of $0.1 make $1, which float64 sums do not,
// and nothing is reserved once every call has settled.
func TestAmountsAreExact(t *testing.T) {
	t.Parallel()
	eachMode(t, func(t *testing.T, inMemory bool) {
		ctx := context.Background()
		s := newService(t, storetest.DB(t), Options{InMemory: inMemory})
		if _, err := s.SetLimit(ctx, "u", ptr(1)); err != nil {
			t.Fatal(err)
		}
		for range 10 {
			r, err := s.Reserve(ctx, "u", 0.1)
			if err != nil {
				t.Fatal(err)
			}
			r.Settle(ctx, 0.1)
		}
		st, err := s.Status(ctx, "u")
		if err != nil || st.Spent != 1 || st.Reserved != 0 || *st.Remaining != 0 {
			t.Fatalf("status %+v %v; want spent exactly 1 and nothing reserved", st, err)
		}
	})
}

// Ensure a caller without a budget costs no store work on the store path (no month document)
// and, in memory, has the cost counted but nothing written; a caller with one has the month
// written behind.
func TestNoBudgetNoStoreWork(t *testing.T) {
	t.Parallel()
	eachMode(t, func(t *testing.T, inMemory bool) {
		ctx := context.Background()
		db := storetest.DB(t)
		s := newService(t, db, Options{InMemory: inMemory, WriteEvery: time.Hour})
		if _, err := s.SetLimit(ctx, "limited", ptr(5)); err != nil {
			t.Fatal(err)
		}
		for _, user := range []string{"free", "limited"} {
			for range 3 {
				r, err := s.Reserve(ctx, user, 0.5)
				if err != nil {
					t.Fatal(err)
				}
				r.Settle(ctx, 0.25)
			}
		}
		if err := s.Close(ctx); err != nil {
			t.Fatal(err)
		}
		var docs []month
		cur, err := db.Collection(Collection).Find(ctx, bson.D{{Key: "month", Value: bson.D{{Key: "$exists", Value: true}}}})
		if err != nil || cur.All(ctx, &docs) != nil {
			t.Fatal(err)
		}
		if len(docs) != 1 || docs[0].UserID != "limited" || docs[0].Spent != toUnits(0.75) || docs[0].Reserved != 0 {
			t.Fatalf("month documents %+v; want one, the limited user's, spent 0.75", docs)
		}
	})
}

// Ensure a budget cleared in the process that keeps budgets in memory (the admin endpoint of
// serve) is cleared in its month document too, so that a budget set again from another
// process (`app users budget`) counts the month's whole spend from the usage log, calls made
// while the user had no budget included, rather than the document's spend of before.
func TestLimitClearedInMemorySeenElsewhere(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := storetest.DB(t)
	var logged atomic.Int64 // the usage log's total for the user, in units
	spent := func(context.Context, string, int) (float64, error) { return units(logged.Load()).USD(), nil }
	serve := newService(t, db, Options{InMemory: true, WriteEvery: time.Hour, Spent: spent,
		Month: func(context.Context, string, string) (map[string]float64, error) { return nil, nil }})
	cli := newService(t, db, Options{Spent: spent})
	call := func(usd float64) {
		r, err := serve.Reserve(ctx, "carol", usd)
		if err != nil {
			t.Fatal(err)
		}
		if r != nil {
			r.Settle(ctx, usd)
		}
		logged.Add(int64(toUnits(usd)))
	}
	if _, err := cli.SetLimit(ctx, "carol", ptr(1)); err != nil {
		t.Fatal(err)
	}
	call(0.000001)
	if err := serve.ledger.write(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := serve.SetLimit(ctx, "carol", nil); err != nil { // the admin clears it
		t.Fatal(err)
	}
	call(0.1)
	st, err := cli.SetLimit(ctx, "carol", ptr(1))
	if err != nil {
		t.Fatal(err)
	}
	if st.Spent != 0.100001 || *st.Remaining != 0.899999 {
		t.Fatalf("after the budget was set again: spent %v, remaining %v; want 0.100001 and 0.899999", st.Spent, *st.Remaining)
	}
}

// Ensure a limit set by another process (another Service on the same database, as `app users
// budget` beside replicas) takes effect in memory once the limits are read again (about a
// second; the bound allowed here is loose, for a loaded machine), and at once when the store
// reports the write (LimitsChanged).
func TestLimitSetElsewhereTakesEffect(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := storetest.DB(t)
	s := newService(t, db, Options{InMemory: true})
	other := newService(t, db, Options{})
	r, err := s.Reserve(ctx, "u", 0.5)
	if err != nil {
		t.Fatal(err)
	}
	r.Settle(ctx, 0.5)
	if _, err := other.SetLimit(ctx, "u", ptr(0.75)); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		st, err := s.Status(ctx, "u")
		if err != nil {
			t.Fatal(err)
		}
		if st.Limit != nil && *st.Limit == 0.75 && st.Spent == 0.5 && *st.Remaining == 0.25 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("status %+v 30 s after the limit was set elsewhere", st)
		}
		time.Sleep(50 * time.Millisecond) // polling the figure an operator would read
	}
	if _, err := s.Reserve(ctx, "u", 0.5); err == nil {
		t.Fatal("a call over the limit set elsewhere was admitted")
	}
	// Told of the write, the service reads the limits again before it answers.
	if _, err := other.SetLimit(ctx, "u", ptr(2)); err != nil {
		t.Fatal(err)
	}
	s.LimitsChanged()
	if st, err := s.Status(ctx, "u"); err != nil || st.Limit == nil || *st.Limit != 2 {
		t.Fatalf("status %+v %v right after LimitsChanged, want the limit of 2 set elsewhere", st, err)
	}
}

// Ensure a hold whose process died is released after HoldFor, and that a settle arriving
// after that still counts the cost.
func TestDeadReservationReleased(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := newClock()
	s := newService(t, storetest.DB(t), Options{Now: clk.now, HoldFor: time.Minute})
	if _, err := s.SetLimit(ctx, "u3", ptr(1)); err != nil {
		t.Fatal(err)
	}
	late, err := s.Reserve(ctx, "u3", 0.6)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Reserve(ctx, "u3", 0.6); err == nil {
		t.Fatal("a live hold did not count")
	}
	clk.add(time.Minute)
	r, err := s.Reserve(ctx, "u3", 0.6)
	if err != nil {
		t.Fatalf("the dead hold was not released: %v", err)
	}
	late.Settle(ctx, 0.3)
	r.Settle(ctx, 0.2)
	st, _ := s.Status(ctx, "u3")
	if !near(st.Spent, 0.5) || !near(st.Reserved, 0) || !near(*st.Remaining, 0.5) {
		t.Fatalf("status %+v", st)
	}
}

// hammer runs n concurrent calls of worst case `worst` that cost `actual`, and returns how many
// were admitted; every refusal must be the budget's.
func hammer(t *testing.T, s *Service, user string, n int, worst, actual float64) int64 {
	t.Helper()
	var admitted atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := s.Reserve(context.Background(), user, worst)
			var ex *Exceeded
			switch {
			case errors.As(err, &ex):
				return
			case err != nil:
				errs <- err
				return
			}
			admitted.Add(1)
			r.Settle(context.Background(), actual)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("a refused call got %v, not the budget's answer", err)
	}
	return admitted.Load()
}

// settled returns the user's status once no reservation is open (a settle the store was too
// busy for is retried in the background).
func settled(t *testing.T, s *Service, user string) *Status {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		st, err := s.Status(context.Background(), user)
		if err != nil {
			t.Fatal(err)
		}
		if st.Reserved < 1e-9 || time.Now().After(deadline) {
			return st
		}
	}
}

// Ensure 200 concurrent calls against a budget covering about 50 end with the month's spend at
// or under the limit, and every refusal is the budget's.
func TestConcurrentCallsStayWithinBudget(t *testing.T) {
	t.Parallel()
	eachMode(t, func(t *testing.T, inMemory bool) {
		ctx := context.Background()
		s := newService(t, storetest.DB(t), Options{InMemory: inMemory})
		if _, err := s.SetLimit(ctx, "u4", ptr(1)); err != nil {
			t.Fatal(err)
		}
		admitted := hammer(t, s, "u4", 200, 0.02, 0.015)
		st := settled(t, s, "u4")
		if st.Spent > 1 || st.Reserved != 0 || admitted < 50 || admitted > 66 {
			t.Fatalf("admitted %d, status %+v", admitted, st)
		}
		if st.Spent != (toUnits(0.015) * units(admitted)).USD() {
			t.Fatalf("spent %g, want %d × 0.015", st.Spent, admitted)
		}
	})
}

// Ensure two processes on one MongoDB share one budget exactly (needs TEST_MONGODB_URI: the
// embedded store isolates no updates between processes).
func TestTwoProcessesShareBudget(t *testing.T) {
	if db := os.Getenv("BUDGET_HELPER_DB"); db != "" {
		st := storetest.Store(t)
		s := newService(t, st.DB(db), Options{})
		fmt.Printf("admitted=%d\n", hammer(t, s, "u5", 100, 0.02, 0.02))
		return
	}
	if os.Getenv("TEST_MONGODB_URI") == "" {
		t.Skip("TEST_MONGODB_URI is not set: two processes need MongoDB")
	}
	db := storetest.DB(t)
	ctx := context.Background()
	s := newService(t, db, Options{})
	if _, err := s.SetLimit(ctx, "u5", ptr(1)); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	counts := make([]int, 2)
	for i := range counts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.Command(os.Args[0], "-test.run=^TestTwoProcessesShareBudget$", "-test.count=1")
			cmd.Env = append(os.Environ(), "BUDGET_HELPER_DB="+db.Name())
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Errorf("helper process: %v\n%s", err, out)
				return
			}
			for _, line := range strings.Split(string(out), "\n") {
				if n, ok := strings.CutPrefix(line, "admitted="); ok {
					counts[i], _ = strconv.Atoi(n)
				}
			}
		}()
	}
	wg.Wait()
	st := settled(t, s, "u5")
	if counts[0]+counts[1] != 50 || !near(st.Spent, 1) || st.Reserved > 1e-9 {
		t.Fatalf("admitted %v, status %+v", counts, st)
	}
}

// Ensure a limit set while a refresh of the limits is reading them survives that refresh: the
// refresh read the store before the write and must not put the old table back (an admin's
// Save followed at once by the user's GET /api/ai/budget answered limit null).
func TestLimitSetDuringRefreshKept(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := storetest.DB(t)
	s := newService(t, db, Options{InMemory: true})
	if _, err := s.Status(ctx, "b"); err != nil { // the limits are read
		t.Fatal(err)
	}
	// Another process sets a limit: the version moves, the next refresh here reads all.
	if _, err := newService(t, db, Options{}).SetLimit(ctx, "a", ptr(1)); err != nil {
		t.Fatal(err)
	}
	overlapped := false
	s.limits.afterRead = func() {
		s.limits.afterRead, overlapped = nil, true
		if _, err := s.SetLimit(ctx, "b", ptr(12.5)); err != nil {
			t.Error(err)
		}
	}
	if err := s.limits.refresh(ctx); err != nil || !overlapped {
		t.Fatalf("refresh: %v, overlapped by the write: %v", err, overlapped)
	}
	if st, err := s.Status(ctx, "b"); err != nil || st.Limit == nil || *st.Limit != 12.5 {
		t.Fatalf("status %+v %v after a refresh that overlapped the write, want the limit of 12.5", st, err)
	}
	// The next refresh reads the store again and keeps both.
	if err := s.limits.refresh(ctx); err != nil {
		t.Fatal(err)
	}
	for user, want := range map[string]float64{"a": 1, "b": 12.5} {
		if l, err := s.OwnLimit(ctx, user); err != nil || l == nil || *l != want {
			t.Fatalf("%s's own limit %v %v after the next refresh, want %v", user, l, err, want)
		}
	}
}
