// Package budget enforces per-user monthly AI budgets in US dollars per UTC calendar month.
//
// A user's budget is their own limit, else the default (ai.default_monthly_budget); a caller
// with neither has no budget, and their calls cost no reservation and no store work. For a
// caller with a budget, each call's worst-case cost is reserved before the provider is called
// and settled to its real cost afterwards, so the month's spend never exceeds the limit and a
// refused call costs nothing.
//
// Where the reservations live depends on who can make them:
//   - In memory (Options.InMemory), when this process is the only one that reserves on its
//     database (it owns the embedded store): the month's spend of every user is read from the
//     usage rollup once at start and kept in memory; reserving and settling are memory
//     operations; the spend of users with a budget is written behind to their month document
//     about once a second, for other processes (operator commands) to read.
//   - In the store otherwise (replicas on MongoDB): one conditional atomic update of the user's
//     month document before the call and one after; a reservation whose process died is
//     released once its hold time has passed.
//
// Either way, limits are set in the store (by any process: `app users budget`, the API) and
// read by every process within about a second.
//
// ai_budgets holds three kinds of documents (amounts in 1e-10 USD, limits in dollars):
//
//	{_id: "<userId>", userId, limit}                  the user's own budget (absent or null: the default)
//	{_id: "~limits", n}                               moved by every change of a limit
//	{_id: "<userId>|2026-11", userId, month, limit, spent, reserved, left, holds: {<id>: {usd, until}}, dead: {<id>: true}}
//
// In a month document, spent is the month's recorded cost, reserved the sum of open holds, and
// left = limit - spent - reserved, the field the reservation's condition reads (the embedded
// store has no expression operators to compute it in the filter).
package budget

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"

	"github.com/acme/app/internal/apperr"
)

// Collection is the name of the collection this package owns.
const Collection = "ai_budgets"

// SpentReader returns a user's recorded AI cost over the last `days` UTC days, today
// included (the usage log's Summary).
type SpentReader func(ctx context.Context, userID string, days int) (float64, error)

// MonthReader returns every user's recorded AI cost from the UTC day `from` to `to`
// (YYYY-MM-DD, both included), by user id.
type MonthReader func(ctx context.Context, from, to string) (map[string]float64, error)

// Options configure the service.
type Options struct {
	// Default is the budget of users without their own (ai.default_monthly_budget); nil: none.
	Default *float64
	// HoldFor is how long a reservation in the store is held before it is presumed dead (its
	// process gone) and released. It must outlast the longest call (ai.timeout, and
	// ai.stream_max_duration for a stream); default 2 minutes.
	HoldFor time.Duration
	// Spent reads the usage log, for the month's spend before its document existed. nil: 0.
	Spent SpentReader
	// InMemory keeps the month's budgets in this process's memory: set it only when no other
	// process makes AI calls on this database (this process owns the embedded store).
	InMemory bool
	// Month reads the month's spend of every user at start (InMemory). nil: 0.
	Month MonthReader
	// WriteEvery is how often spend kept in memory is written behind (default 1s).
	WriteEvery time.Duration
	Logger     *slog.Logger
	Now        func() time.Time // nil: time.Now
}

// Service reserves, settles and reports budgets.
type Service struct {
	coll    *mongo.Collection
	def     *float64
	holdFor time.Duration
	spent   SpentReader
	now     func() time.Time
	log     *slog.Logger
	limits  *limitTable
	ledger  *ledger // nil: budgets in the store
}

// New returns the service on db's ai_budgets collection. With InMemory it reads the month's
// spend and starts the writer that Close stops; without, it starts nothing and talks to the
// store only when a method is called. It creates no index: the process that serves calls
// EnsureIndexes.
func New(ctx context.Context, db *mongo.Database, opts Options) (*Service, error) {
	s := &Service{coll: db.Collection(Collection), def: opts.Default, holdFor: opts.HoldFor, spent: opts.Spent,
		now: opts.Now, log: opts.Logger}
	if s.holdFor <= 0 {
		s.holdFor = 2 * time.Minute
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.spent == nil {
		s.spent = func(context.Context, string, int) (float64, error) { return 0, nil }
	}
	s.limits = &limitTable{coll: s.coll}
	if opts.InMemory {
		l, err := openLedger(ctx, s, opts.Month, opts.WriteEvery)
		if err != nil {
			return nil, err
		}
		s.ledger = l
	}
	return s, nil
}

// EnsureIndexes creates the ai_budgets index (by user); creating an existing index is a no-op.
func (s *Service) EnsureIndexes(ctx context.Context) error {
	if _, err := s.coll.Indexes().CreateOne(ctx, mongo.IndexModel{
		Keys: bson.D{{Key: "userId", Value: 1}}, Options: options.Index().SetName("userId_1"),
	}); err != nil {
		return fmt.Errorf("budget: create index: %w", err)
	}
	return nil
}

// Close writes what the memory holds that the store does not have yet and stops the writer.
// It is a no-op for budgets in the store.
func (s *Service) Close(ctx context.Context) error {
	if s.ledger == nil {
		return nil
	}
	return s.ledger.close(ctx)
}

// LimitsChanged brings the limits up to date at once; call it when the store reports a write
// to the collection (a limit set by another process). Without it, a limit set elsewhere takes
// effect within about a second.
func (s *Service) LimitsChanged() { s.limits.changed() }

// Status is the body of GET /api/ai/budget. Limit and Remaining are null without a budget.
// Amounts have at most 10 decimals.
type Status struct {
	Limit     *float64  `json:"limit"`
	Spent     float64   `json:"spent"`
	Reserved  float64   `json:"reserved"`
	Remaining *float64  `json:"remaining"`
	ResetsAt  time.Time `json:"resetsAt"`
}

// status builds a Status from amounts in units.
func status(limit *units, spent, reserved units, resets time.Time) *Status {
	st := &Status{Spent: spent.USD(), Reserved: reserved.USD(), ResetsAt: resets}
	if limit != nil {
		l, left := limit.USD(), max(*limit-spent-reserved, 0).USD()
		st.Limit, st.Remaining = &l, &left
	}
	return st
}

// Reservation is a held worst-case cost, settled once to the call's real cost.
type Reservation struct {
	once    sync.Once
	settle  func(ctx context.Context, actual units)
	limited bool // the user has a budget: the worst case is held against it
}

// Limited reports whether r holds room in a budget (its user has one); a reservation of a
// user without one only counts the call's cost when it settles.
func (r *Reservation) Limited() bool { return r != nil && r.limited }

// Settle turns the reservation into the call's real cost (0 for a call that cost nothing).
// Only the first call counts. It is a no-op on a nil Reservation.
func (r *Reservation) Settle(ctx context.Context, actualUSD float64) {
	if r == nil {
		return
	}
	r.once.Do(func() { r.settle(context.WithoutCancel(ctx), toUnits(actualUSD)) })
}

// monthKey returns the month of t as YYYY-MM and the start of the next UTC month.
func monthKey(t time.Time) (string, time.Time) {
	t = t.UTC()
	return t.Format("2006-01"), time.Date(t.Year(), t.Month()+1, 1, 0, 0, 0, 0, time.UTC)
}

func monthID(userID, m string) string { return userID + "|" + m }

// limitOf returns the budget that applies to userID: their own, else the default; nil: none.
func (s *Service) limitOf(ctx context.Context, userID string) (*units, error) {
	own, ok, err := s.limits.get(ctx, userID)
	switch {
	case err != nil:
		return nil, err
	case ok:
		return &own, nil
	case s.def != nil:
		d := toUnits(*s.def)
		return &d, nil
	}
	return nil, nil
}

// Reserve holds worstCaseUSD of userID's current month for one call. It returns a nil
// Reservation, at no cost, for a user without a budget on the store path. Returns
// PaymentRequired (402) when the budget cannot cover it (the cause is an *Exceeded),
// Invalid (400) when worstCaseUSD is +Inf (the call's model has no price, so a user with a
// budget cannot call it: its cost would be recorded as 0 and the budget never bound it),
// Unavailable when the store fails.
func (s *Service) Reserve(ctx context.Context, userID string, worstCaseUSD float64) (*Reservation, error) {
	limit, err := s.limitOf(ctx, userID)
	if err != nil {
		return nil, err
	}
	if math.IsInf(worstCaseUSD, 1) {
		if limit != nil {
			e := apperr.E(apperr.Invalid, "this model has no price in the server's price table, and a caller with a monthly AI budget "+
				"may call only priced models (the operator adds prices in ai.pricing_file)")
			e.Param, e.Code = "model", "model_not_priced"
			return nil, e
		}
		worstCaseUSD = 0
	}
	worst := toUnits(worstCaseUSD)
	if s.ledger != nil {
		return s.ledger.reserve(ctx, userID, limit, worst)
	}
	if limit == nil {
		return nil, nil
	}
	return s.reserveInStore(ctx, userID, worst)
}

// Status returns userID's budget for the current month.
func (s *Service) Status(ctx context.Context, userID string) (*Status, error) {
	limit, err := s.limitOf(ctx, userID)
	if err != nil {
		return nil, err
	}
	if s.ledger != nil {
		return s.ledger.status(userID, limit), nil
	}
	return s.statusInStore(ctx, userID, limit)
}

// SetLimit gives userID a budget of limit USD per month (nil: none of their own, the
// default applies), effective at once in this process and within about a second in every
// other. Returns Invalid for a limit that is negative, not finite or above MaxLimit.
func (s *Service) SetLimit(ctx context.Context, userID string, limit *float64) (*Status, error) {
	if limit != nil && !ValidLimit(*limit) {
		return nil, apperr.E(apperr.Invalid, "budget must be "+LimitRule)
	}
	if err := s.limits.set(ctx, userID, limit); err != nil {
		return nil, err
	}
	// The month document follows in memory too: the ledger writes it behind only for users
	// with a budget, so a budget cleared here and left in the document would make another
	// process that sets one again count the document's old spend instead of the month's.
	effective, err := s.limitOf(ctx, userID)
	if err != nil {
		return nil, err
	}
	if err := s.setMonthLimit(ctx, userID, effective); err != nil {
		return nil, err
	}
	return s.Status(ctx, userID)
}

// OwnLimit returns userID's own monthly budget in USD; nil when they have none (the default,
// if any, applies).
func (s *Service) OwnLimit(ctx context.Context, userID string) (*float64, error) {
	own, ok, err := s.limits.get(ctx, userID)
	if err != nil || !ok {
		return nil, err
	}
	v := own.USD()
	return &v, nil
}

// recorded is the user's recorded cost of the current month.
func (s *Service) recorded(ctx context.Context, userID string, now time.Time) (units, error) {
	spent, err := s.spent(ctx, userID, now.UTC().Day())
	if err != nil {
		return 0, apperr.Wrap(apperr.Unavailable, fmt.Errorf("budget: read usage: %w", err), "the AI budget could not be read; try again")
	}
	return toUnits(spent), nil
}

// Exceeded is the refusal of a call the budget cannot cover.
type Exceeded struct {
	Limit    float64
	Left     float64 // what remains of the month's budget
	Worst    float64 // the call's worst-case cost
	ResetsOn time.Time
}

func (e *Exceeded) Error() string {
	day := e.ResetsOn.Format(time.DateOnly)
	if e.Left < 1e-9 || e.Left < e.Limit*1e-6 {
		return fmt.Sprintf("Monthly AI budget of %s reached; it resets on %s", Dollars(e.Limit), day)
	}
	return fmt.Sprintf("Monthly AI budget of %s nearly reached: %s left is less than this call's worst case of %s "+
		"(its prompt and its maximum output tokens; a lower maxTokens may fit); it resets on %s",
		Dollars(e.Limit), Dollars(e.Left), Dollars(e.Worst), day)
}

// exceeded is the PaymentRequired error of a refused call; its message is the Exceeded's.
func exceeded(limit, left, worst float64, resets time.Time) error {
	e := &Exceeded{Limit: limit, Left: max(left, 0), Worst: worst, ResetsOn: resets}
	return apperr.Wrap(apperr.PaymentRequired, e, e.Error())
}
