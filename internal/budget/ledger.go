package budget

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo/options"
)

// ledger keeps the current month's budgets in memory, for a process that is the only one
// reserving on its database. Every call's cost is counted when it settles, so that a budget
// set later starts from the month's real spend; only users with a budget reserve.
type ledger struct {
	svc   *Service
	every time.Duration

	mu       sync.Mutex
	month    string              // the month accounts holds
	resets   time.Time           // the start of the next month
	accounts map[string]*account // by user id
	dirty    map[*account]bool   // settled since their last write (this month's or the last)

	stop chan struct{}
	done chan struct{}
}

// account is one user's month.
type account struct {
	userID, month   string
	spent, reserved units
	settled         chan struct{} // closed (and replaced) when a reservation settles while waiting > 0
	waiting         int           // calls waiting for a settlement
}

// openLedger reads the month's spend of every user and starts the writer.
func openLedger(ctx context.Context, s *Service, read MonthReader, every time.Duration) (*ledger, error) {
	if every <= 0 {
		every = time.Second
	}
	l := &ledger{svc: s, every: every, dirty: map[*account]bool{}, stop: make(chan struct{}), done: make(chan struct{})}
	now := s.now().UTC()
	l.month, l.resets = monthKey(now)
	l.accounts = map[string]*account{}
	if read != nil {
		first := time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC)
		spent, err := read(ctx, first.Format(time.DateOnly), now.Format(time.DateOnly))
		if err != nil {
			return nil, fmt.Errorf("budget: read the month's spend: %w", err)
		}
		for user, usd := range spent {
			l.accounts[user] = &account{userID: user, month: l.month, spent: toUnits(usd), settled: make(chan struct{})}
		}
	}
	go l.run()
	return l, nil
}

// account returns userID's account of the current month, starting a new month when the clock
// has passed into one. The caller holds l.mu.
func (l *ledger) account(userID string) *account {
	if m, resets := monthKey(l.svc.now()); m != l.month {
		l.month, l.resets, l.accounts = m, resets, map[string]*account{}
	}
	a := l.accounts[userID]
	if a == nil {
		a = &account{userID: userID, month: l.month, settled: make(chan struct{})}
		l.accounts[userID] = a
	}
	return a
}

// maxWait bounds how long a call waits for the user's calls in flight to settle when only
// their reservations keep it from fitting.
const maxWait = 30 * time.Second

// reserve holds worst of userID's month when they have a budget; the reservation of a user
// without one only counts the call's cost when it settles. A call that does not fit now but
// would once the user's calls in flight settle (their worst cases are held, their real costs
// are usually far less) waits for them, up to maxWait or until ctx ends, rather than being
// refused while the budget has room.
func (l *ledger) reserve(ctx context.Context, userID string, limit *units, worst units) (*Reservation, error) {
	var timeout <-chan time.Time
	l.mu.Lock()
	defer l.mu.Unlock()
	a := l.account(userID)
	if limit == nil {
		worst = 0
	}
	for limit != nil {
		left := *limit - a.spent - a.reserved
		if left >= worst && left > 0 {
			break
		}
		// Room for the worst case, and something left (a call of unknown price is not free
		// on a spent budget), once every call in flight has settled?
		if free := *limit - a.spent; a.reserved == 0 || free < worst || free <= 0 {
			return nil, exceeded(limit.USD(), left.USD(), worst.USD(), l.resets)
		}
		if timeout == nil {
			t := time.NewTimer(maxWait)
			defer t.Stop()
			timeout = t.C
		}
		settled := a.settled
		a.waiting++
		l.mu.Unlock()
		gaveUp := false
		select {
		case <-settled:
		case <-ctx.Done():
			gaveUp = true
		case <-timeout:
			gaveUp = true
		}
		l.mu.Lock()
		a.waiting--
		if gaveUp {
			return nil, exceeded(limit.USD(), (*limit - a.spent - a.reserved).USD(), worst.USD(), l.resets)
		}
	}
	a.reserved += worst
	return &Reservation{limited: limit != nil, settle: func(_ context.Context, actual units) {
		l.mu.Lock()
		a.reserved -= worst
		a.spent += actual
		if limit != nil || actual != 0 {
			l.dirty[a] = true
		}
		if a.waiting > 0 {
			close(a.settled)
			a.settled = make(chan struct{})
		}
		l.mu.Unlock()
	}}, nil
}

// status returns userID's month.
func (l *ledger) status(userID string, limit *units) *Status {
	l.mu.Lock()
	defer l.mu.Unlock()
	a := l.account(userID)
	return status(limit, a.spent, a.reserved, l.resets)
}

// run writes behind every l.every until close.
func (l *ledger) run() {
	defer close(l.done)
	t := time.NewTicker(l.every)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			if err := l.write(ctx); err != nil {
				l.svc.log.Warn("budget: spend not written yet; retrying", "err", err)
			}
			cancel()
		}
	}
}

// write stores the spend of every account settled since its last write whose user has a
// budget, in its month document (for other processes to read; this one keeps the memory).
// An account that fails stays dirty for the next write.
func (l *ledger) write(ctx context.Context) error {
	type snapshot struct {
		a               *account
		spent, reserved units
	}
	l.mu.Lock()
	batch := make([]snapshot, 0, len(l.dirty))
	for a := range l.dirty {
		batch = append(batch, snapshot{a, a.spent, a.reserved})
		delete(l.dirty, a)
	}
	l.mu.Unlock()
	var errs []error
	for _, b := range batch {
		limit, err := l.svc.limitOf(ctx, b.a.userID)
		if err == nil && limit == nil {
			continue // no budget: the usage log is the record
		}
		if err == nil {
			_, err = l.svc.coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: monthID(b.a.userID, b.a.month)}},
				bson.D{{Key: "$set", Value: bson.D{
					{Key: "userId", Value: b.a.userID}, {Key: "month", Value: b.a.month}, {Key: "limit", Value: limit.USD()},
					{Key: "spent", Value: int64(b.spent)}, {Key: "reserved", Value: int64(b.reserved)},
					{Key: "left", Value: int64(*limit - b.spent - b.reserved)},
				}}}, options.Update().SetUpsert(true))
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("budget: write %s: %w", monthID(b.a.userID, b.a.month), err))
			l.mu.Lock()
			l.dirty[b.a] = true
			l.mu.Unlock()
		}
	}
	return errors.Join(errs...)
}

// close stops the writer and writes what is left, until ctx ends.
func (l *ledger) close(ctx context.Context) error {
	select {
	case <-l.stop:
	default:
		close(l.stop)
	}
	<-l.done
	return l.write(ctx)
}
