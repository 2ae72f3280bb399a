// Package budget enforces per-user monthly AI budgets in US dollars per UTC calendar month.
//
// The check and the spend live in MongoDB (the ai_budgets collection), so any number of
// processes on one database share them. Before a provider is called, the call's worst-case
// cost is reserved by one conditional atomic update of the user's month document (it matches
// only while the budget has room for it); afterwards the reservation is settled to the real
// cost. A reservation whose process died is released once its hold time has passed. The
// month's spend therefore never exceeds the budget, and a refused call costs nothing.
//
// ai_budgets holds two kinds of documents:
//
//	{_id: "<userId>", userId, limit}                  the user's own budget (absent: the default)
//	{_id: "<userId>|2026-11", userId, month, limit, spent, reserved, left, holds: {<id>: {usd, until}}, dead: {<id>: true}}
//
// In a month document, spent is the month's recorded cost (the usage log's total when the
// document was created, plus every settled call since), reserved the sum of open holds, and
// left = limit - spent - reserved, the field the reservation's condition reads (the embedded
// store has no expression operators to compute it in the filter). A null limit means no budget.
package budget

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/google/uuid"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"

	"github.com/acme/app/internal/apperr"
)

// Collection is the name of the collection this package owns.
const Collection = "ai_budgets"

// epsilon absorbs the rounding of sums of dollars in float64 (a budget of $1.00 holds fifty
// calls of $0.02): far below the 10-decimal rounding of costs.
const epsilon = 1e-12

// MaxLimit is the largest budget accepted (USD per month).
const MaxLimit = 1e9

// SpentReader returns a user's recorded AI cost over the last `days` UTC days, today
// included (the usage log's Summary).
type SpentReader func(ctx context.Context, userID string, days int) (float64, error)

// Options configure the service.
type Options struct {
	// Default is the budget of users without their own (ai.default_monthly_budget); nil: none.
	Default *float64
	// HoldFor is how long a reservation is held before it is presumed dead (its process gone)
	// and released. It must outlast the longest call (ai.timeout); default 2 minutes.
	HoldFor time.Duration
	// Spent reads the usage log, for the month's spend before its budget document existed.
	// nil: 0.
	Spent SpentReader
	Now   func() time.Time // nil: time.Now
}

// Service reserves, settles and reports budgets.
type Service struct {
	coll    *mongo.Collection
	def     *float64
	holdFor time.Duration
	spent   SpentReader
	now     func() time.Time
}

// New returns the service on db's ai_budgets collection and creates its index.
func New(ctx context.Context, db *mongo.Database, opts Options) (*Service, error) {
	s := &Service{coll: db.Collection(Collection), def: opts.Default, holdFor: opts.HoldFor, spent: opts.Spent,
		now: opts.Now}
	if s.holdFor <= 0 {
		s.holdFor = 2 * time.Minute
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.spent == nil {
		s.spent = func(context.Context, string, int) (float64, error) { return 0, nil }
	}
	if _, err := s.coll.Indexes().CreateOne(ctx, mongo.IndexModel{
		Keys: bson.D{{Key: "userId", Value: 1}}, Options: options.Index().SetName("userId_1"),
	}); err != nil {
		return nil, fmt.Errorf("budget: create index: %w", err)
	}
	return s, nil
}

// month is a budget's month document as stored.
type month struct {
	ID       string          `bson:"_id"`
	UserID   string          `bson:"userId"`
	Month    string          `bson:"month"`
	Limit    *float64        `bson:"limit"`
	Spent    float64         `bson:"spent"`
	Reserved float64         `bson:"reserved"`
	Left     float64         `bson:"left"`
	Holds    map[string]hold `bson:"holds"`
}

// hold is one open reservation.
type hold struct {
	USD   float64   `bson:"usd"`
	Until time.Time `bson:"until"`
}

// userDoc is a user's own budget.
type userDoc struct {
	ID     string   `bson:"_id"`
	UserID string   `bson:"userId"`
	Limit  *float64 `bson:"limit"`
}

// Status is the body of GET /api/ai/budget. Limit and Remaining are null without a budget.
type Status struct {
	Limit     *float64  `json:"limit"`
	Spent     float64   `json:"spent"`
	Reserved  float64   `json:"reserved"`
	Remaining *float64  `json:"remaining"`
	ResetsAt  time.Time `json:"resetsAt"`
}

// Reservation is a held worst-case cost, settled once to the call's real cost.
type Reservation struct {
	svc   *Service
	docID string
	id    string
	usd   float64
	once  sync.Once
}

// monthKey returns the month of t as YYYY-MM and the start of the next UTC month.
func monthKey(t time.Time) (string, time.Time) {
	t = t.UTC()
	return t.Format("2006-01"), time.Date(t.Year(), t.Month()+1, 1, 0, 0, 0, 0, time.UTC)
}

func monthID(userID, m string) string { return userID + "|" + m }

// Reserve holds worstCaseUSD of userID's current month for one call, with one conditional
// atomic update when the month's document exists. Returns PaymentRequired (402) when the
// budget cannot cover it (the cause is an *Exceeded), Unavailable when the store fails.
func (s *Service) Reserve(ctx context.Context, userID string, worstCaseUSD float64) (*Reservation, error) {
	if math.IsNaN(worstCaseUSD) || worstCaseUSD < 0 {
		worstCaseUSD = 0
	}
	now := s.now()
	m, resets := monthKey(now)
	r := &Reservation{svc: s, docID: monthID(userID, m), id: uuid.NewString(), usd: worstCaseUSD}
	filter := bson.D{{Key: "_id", Value: r.docID}, {Key: "$or", Value: bson.A{
		bson.D{{Key: "limit", Value: nil}},
		// Room for the worst case, and something left (a call of unknown price is not free
		// on a spent budget).
		bson.D{{Key: "left", Value: bson.D{{Key: "$gte", Value: worstCaseUSD - epsilon}, {Key: "$gt", Value: 0}}}},
	}}}
	update := bson.D{
		{Key: "$inc", Value: bson.D{{Key: "reserved", Value: worstCaseUSD}, {Key: "left", Value: -worstCaseUSD}}},
		{Key: "$set", Value: bson.D{{Key: "holds." + r.id, Value: hold{USD: worstCaseUSD, Until: now.Add(s.holdFor).UTC()}}}},
	}
	var d *month
	for range 3 {
		matched, err := s.update(ctx, filter, update)
		if err != nil {
			return nil, err
		}
		if matched {
			return r, nil
		}
		// No document yet, or no room: create the document, or release dead holds, and try
		// again while that may help.
		if d, err = s.load(ctx, userID, m, now); err != nil {
			return nil, err
		}
		if d.Limit == nil {
			continue // created just now, or the budget was cleared meanwhile
		}
		released, err := s.releaseDead(ctx, d, now)
		if err != nil {
			return nil, err
		}
		if released == 0 && (d.Left < worstCaseUSD-epsilon || d.Left <= 0) {
			return nil, exceeded(*d.Limit, d.Left, worstCaseUSD, resets)
		}
	}
	if d == nil || d.Limit == nil {
		return nil, apperr.E(apperr.Unavailable, "the AI budget could not be checked; try again")
	}
	return nil, exceeded(*d.Limit, d.Left, worstCaseUSD, resets)
}

// Settle turns the reservation into the call's real cost (0 for a call that cost nothing).
// Only the first call counts. A hold already released as dead still has its cost counted. When
// the store does not answer, Settle keeps trying in the background until HoldFor has passed.
func (r *Reservation) Settle(ctx context.Context, actualUSD float64) {
	if r == nil {
		return
	}
	r.once.Do(func() {
		if math.IsNaN(actualUSD) || actualUSD < 0 {
			actualUSD = 0
		}
		ctx = context.WithoutCancel(ctx)
		first, cancel := context.WithTimeout(ctx, 30*time.Second)
		err := r.settle(first, actualUSD)
		cancel()
		if err == nil {
			return
		}
		go func() {
			ctx, cancel := context.WithTimeout(ctx, r.svc.holdFor)
			defer cancel()
			for wait := 100 * time.Millisecond; ; wait = min(2*wait, 5*time.Second) {
				select {
				case <-ctx.Done():
					return // the usage log keeps the cost; the budget misses it
				case <-time.After(wait):
				}
				if r.settle(ctx, actualUSD) == nil {
					return
				}
			}
		}()
	})
}

// settle applies the settlement once, whichever attempt reaches the store: it matches the
// open hold, else the record of its release as dead, else nothing (an earlier attempt
// succeeded).
func (r *Reservation) settle(ctx context.Context, actualUSD float64) error {
	s := r.svc
	matched, err := s.update(ctx,
		bson.D{{Key: "_id", Value: r.docID}, {Key: "holds." + r.id, Value: bson.D{{Key: "$exists", Value: true}}}},
		bson.D{
			{Key: "$inc", Value: bson.D{{Key: "reserved", Value: -r.usd}, {Key: "left", Value: r.usd - actualUSD}, {Key: "spent", Value: actualUSD}}},
			{Key: "$unset", Value: bson.D{{Key: "holds." + r.id, Value: ""}}},
		})
	if err != nil || matched {
		return err
	}
	_, err = s.update(ctx,
		bson.D{{Key: "_id", Value: r.docID}, {Key: "dead." + r.id, Value: bson.D{{Key: "$exists", Value: true}}}},
		bson.D{
			{Key: "$inc", Value: bson.D{{Key: "left", Value: -actualUSD}, {Key: "spent", Value: actualUSD}}},
			{Key: "$unset", Value: bson.D{{Key: "dead." + r.id, Value: ""}}},
		})
	return err
}

// Status returns userID's budget for the current month.
func (s *Service) Status(ctx context.Context, userID string) (*Status, error) {
	now := s.now()
	m, resets := monthKey(now)
	d, err := s.find(ctx, monthID(userID, m))
	if err != nil {
		return nil, err
	}
	if d != nil {
		if _, err := s.releaseDead(ctx, d, now); err != nil {
			return nil, err
		}
		if d, err = s.find(ctx, d.ID); err != nil || d == nil {
			return nil, apperr.Wrap(apperr.Unavailable, err, "the AI budget could not be read; try again")
		}
	} else {
		limit, err := s.limitOf(ctx, userID)
		if err != nil {
			return nil, err
		}
		spent, err := s.recorded(ctx, userID, now)
		if err != nil {
			return nil, err
		}
		d = &month{Limit: limit, Spent: spent}
		if limit != nil {
			d.Left = *limit - spent
		}
	}
	st := &Status{Limit: d.Limit, Spent: d.Spent, Reserved: d.Reserved, ResetsAt: resets}
	if d.Limit != nil {
		left := max(d.Left, 0)
		st.Remaining = &left
	}
	return st, nil
}

// SetLimit gives userID a budget of limit USD per month (nil: none of their own, the
// default applies), effective at once for the current month. Returns Invalid for a limit
// that is negative, not finite or above MaxLimit.
func (s *Service) SetLimit(ctx context.Context, userID string, limit *float64) (*Status, error) {
	if limit != nil && (math.IsNaN(*limit) || *limit < 0 || *limit > MaxLimit) {
		return nil, apperr.E(apperr.Invalid, fmt.Sprintf("budget must be a number of dollars from 0 to %g", float64(MaxLimit)))
	}
	op := bson.D{{Key: "$set", Value: bson.D{{Key: "userId", Value: userID}, {Key: "limit", Value: limit}}}}
	if _, err := s.coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: userID}}, op, options.Update().SetUpsert(true)); err != nil {
		return nil, apperr.Wrap(apperr.Unavailable, fmt.Errorf("budget: set limit: %w", err), "the AI budget could not be saved")
	}
	effective := limit
	if effective == nil {
		effective = s.def
	}
	now := s.now()
	m, _ := monthKey(now)
	for range 20 {
		d, err := s.load(ctx, userID, m, now)
		if err != nil {
			return nil, err
		}
		set := bson.D{{Key: "limit", Value: effective}}
		if effective != nil {
			set = append(set, bson.E{Key: "left", Value: *effective - d.Spent - d.Reserved})
		}
		// Compare-and-set: the document is replaced only if no call moved it meanwhile.
		matched, err := s.update(ctx,
			bson.D{{Key: "_id", Value: d.ID}, {Key: "spent", Value: d.Spent}, {Key: "reserved", Value: d.Reserved}},
			bson.D{{Key: "$set", Value: set}})
		if err != nil {
			return nil, err
		}
		if matched {
			return s.Status(ctx, userID)
		}
	}
	return nil, apperr.E(apperr.Unavailable, "the AI budget is changing too fast to be set; try again")
}

// limitOf returns the budget that applies to userID: their own, else the default.
func (s *Service) limitOf(ctx context.Context, userID string) (*float64, error) {
	var u userDoc
	err := s.coll.FindOne(ctx, bson.D{{Key: "_id", Value: userID}}).Decode(&u)
	switch {
	case errors.Is(err, mongo.ErrNoDocuments):
		return s.def, nil
	case err != nil:
		return nil, apperr.Wrap(apperr.Unavailable, fmt.Errorf("budget: read limit: %w", err), "the AI budget could not be read; try again")
	case u.Limit == nil:
		return s.def, nil
	}
	return u.Limit, nil
}

// recorded is the user's recorded cost of the current month.
func (s *Service) recorded(ctx context.Context, userID string, now time.Time) (float64, error) {
	spent, err := s.spent(ctx, userID, now.UTC().Day())
	if err != nil {
		return 0, apperr.Wrap(apperr.Unavailable, fmt.Errorf("budget: read usage: %w", err), "the AI budget could not be read; try again")
	}
	return spent, nil
}

// load returns the user's month document, creating it when it does not exist yet.
func (s *Service) load(ctx context.Context, userID, m string, now time.Time) (*month, error) {
	id := monthID(userID, m)
	if d, err := s.find(ctx, id); err != nil || d != nil {
		return d, err
	}
	limit, err := s.limitOf(ctx, userID)
	if err != nil {
		return nil, err
	}
	spent, err := s.recorded(ctx, userID, now)
	if err != nil {
		return nil, err
	}
	d := &month{ID: id, UserID: userID, Month: m, Limit: limit, Spent: spent, Holds: map[string]hold{}}
	if limit != nil {
		d.Left = *limit - spent
	}
	if _, err := s.coll.InsertOne(ctx, d); err != nil && !mongo.IsDuplicateKeyError(err) {
		return nil, apperr.Wrap(apperr.Unavailable, fmt.Errorf("budget: create month: %w", err), "the AI budget could not be checked; try again")
	} else if err != nil {
		return s.find(ctx, id) // another call created it first
	}
	return d, nil
}

func (s *Service) find(ctx context.Context, id string) (*month, error) {
	var d month
	err := s.coll.FindOne(ctx, bson.D{{Key: "_id", Value: id}}).Decode(&d)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return nil, nil
	}
	if err != nil {
		return nil, apperr.Wrap(apperr.Unavailable, fmt.Errorf("budget: read: %w", err), "the AI budget could not be checked; try again")
	}
	return &d, nil
}

// releaseDead releases the holds of d whose time has passed, each with its own conditional
// update (so that two processes cannot release one twice), and returns how many it released.
// A released hold is remembered under `dead` until its settlement, if it ever comes.
func (s *Service) releaseDead(ctx context.Context, d *month, now time.Time) (int, error) {
	n := 0
	for id, h := range d.Holds {
		if now.Before(h.Until) {
			continue
		}
		matched, err := s.update(ctx,
			bson.D{{Key: "_id", Value: d.ID}, {Key: "holds." + id, Value: bson.D{{Key: "$exists", Value: true}}}},
			bson.D{
				{Key: "$inc", Value: bson.D{{Key: "reserved", Value: -h.USD}, {Key: "left", Value: h.USD}}},
				{Key: "$unset", Value: bson.D{{Key: "holds." + id, Value: ""}}},
				{Key: "$set", Value: bson.D{{Key: "dead." + id, Value: true}}}, // a late settle still counts
			})
		if err != nil {
			return n, err
		}
		if matched {
			n++
		}
	}
	return n, nil
}

// update applies one conditional update and reports whether it matched.
func (s *Service) update(ctx context.Context, filter, update bson.D) (bool, error) {
	res, err := s.coll.UpdateOne(ctx, filter, update)
	if err != nil {
		return false, apperr.Wrap(apperr.Unavailable, fmt.Errorf("budget: update: %w", err), "the AI budget could not be checked; try again")
	}
	return res.MatchedCount == 1, nil
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

// Dollars writes an amount as $25.00, or with the digits it needs below a cent ($0.000123).
func Dollars(v float64) string {
	if v == math.Round(v*100)/100 || v >= 0.01 {
		return "$" + strconv.FormatFloat(v, 'f', 2, 64)
	}
	return "$" + strconv.FormatFloat(v, 'f', -1, 64)
}
