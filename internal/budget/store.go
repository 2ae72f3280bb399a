package budget

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo"

	"github.com/acme/app/internal/apperr"
)

// Budgets in the store: for replicas sharing one MongoDB, each reservation is one conditional
// atomic update of the user's month document.

// month is a budget's month document as stored.
type month struct {
	ID       string          `bson:"_id"`
	UserID   string          `bson:"userId"`
	Month    string          `bson:"month"`
	Limit    *float64        `bson:"limit"`
	Spent    units           `bson:"spent"`
	Reserved units           `bson:"reserved"`
	Left     units           `bson:"left"`
	Holds    map[string]hold `bson:"holds"`
}

// hold is one open reservation.
type hold struct {
	Units units     `bson:"usd"`
	Until time.Time `bson:"until"`
}

// userDoc is a user's own budget.
type userDoc struct {
	ID     string   `bson:"_id"`
	UserID string   `bson:"userId"`
	Limit  *float64 `bson:"limit"`
}

// reserveInStore holds worst of userID's current month with one conditional atomic update
// when the month's document exists.
func (s *Service) reserveInStore(ctx context.Context, userID string, worst units) (*Reservation, error) {
	now := s.now()
	m, resets := monthKey(now)
	docID, id := monthID(userID, m), uuid.NewString()
	filter := bson.D{{Key: "_id", Value: docID}, {Key: "$or", Value: bson.A{
		bson.D{{Key: "limit", Value: nil}},
		// Room for the worst case, and something left (a call of unknown price is not free
		// on a spent budget).
		bson.D{{Key: "left", Value: bson.D{{Key: "$gte", Value: int64(worst)}, {Key: "$gt", Value: 0}}}},
	}}}
	update := bson.D{
		{Key: "$inc", Value: bson.D{{Key: "reserved", Value: int64(worst)}, {Key: "left", Value: -int64(worst)}}},
		{Key: "$set", Value: bson.D{{Key: "holds." + id, Value: bson.D{
			{Key: "usd", Value: int64(worst)}, {Key: "until", Value: now.Add(s.holdFor).UTC()}}}}},
	}
	r := &Reservation{limited: true, settle: func(ctx context.Context, actual units) { s.settleInStore(ctx, docID, id, worst, actual) }}
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
		if released == 0 && (d.Left < worst || d.Left <= 0) {
			return nil, exceeded(*d.Limit, d.Left.USD(), worst.USD(), resets)
		}
	}
	if d == nil || d.Limit == nil {
		return nil, apperr.E(apperr.Unavailable, "the AI budget could not be checked; try again")
	}
	return nil, exceeded(*d.Limit, d.Left.USD(), worst.USD(), resets)
}

// settleInStore applies a settlement; when the store does not answer, it keeps trying in
// the background until HoldFor has passed.
func (s *Service) settleInStore(ctx context.Context, docID, id string, worst, actual units) {
	first, cancel := context.WithTimeout(ctx, 30*time.Second)
	err := s.settleOnce(first, docID, id, worst, actual)
	cancel()
	if err == nil {
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(ctx, s.holdFor)
		defer cancel()
		for wait := 100 * time.Millisecond; ; wait = min(2*wait, 5*time.Second) {
			select {
			case <-ctx.Done():
				return // the usage log keeps the cost; the budget misses it
			case <-time.After(wait):
			}
			if s.settleOnce(ctx, docID, id, worst, actual) == nil {
				return
			}
		}
	}()
}

// settleOnce applies the settlement once, whichever attempt reaches the store: it matches the
// open hold, else the record of its release as dead, else nothing (an earlier attempt
// succeeded).
func (s *Service) settleOnce(ctx context.Context, docID, id string, worst, actual units) error {
	matched, err := s.update(ctx,
		bson.D{{Key: "_id", Value: docID}, {Key: "holds." + id, Value: bson.D{{Key: "$exists", Value: true}}}},
		bson.D{
			{Key: "$inc", Value: bson.D{{Key: "reserved", Value: -int64(worst)}, {Key: "left", Value: int64(worst - actual)}, {Key: "spent", Value: int64(actual)}}},
			{Key: "$unset", Value: bson.D{{Key: "holds." + id, Value: ""}}},
		})
	if err != nil || matched {
		return err
	}
	_, err = s.update(ctx,
		bson.D{{Key: "_id", Value: docID}, {Key: "dead." + id, Value: bson.D{{Key: "$exists", Value: true}}}},
		bson.D{
			{Key: "$inc", Value: bson.D{{Key: "left", Value: -int64(actual)}, {Key: "spent", Value: int64(actual)}}},
			{Key: "$unset", Value: bson.D{{Key: "dead." + id, Value: ""}}},
		})
	return err
}

// statusInStore returns userID's month from its document; without a budget, the spend is the
// usage log's (calls without a budget do not touch the document).
func (s *Service) statusInStore(ctx context.Context, userID string, limit *units) (*Status, error) {
	now := s.now()
	m, resets := monthKey(now)
	if limit == nil {
		spent, err := s.recorded(ctx, userID, now)
		if err != nil {
			return nil, err
		}
		return status(nil, spent, 0, resets), nil
	}
	d, err := s.find(ctx, monthID(userID, m))
	if err != nil {
		return nil, err
	}
	if d == nil {
		spent, err := s.recorded(ctx, userID, now)
		if err != nil {
			return nil, err
		}
		return status(limit, spent, 0, resets), nil
	}
	if _, err := s.releaseDead(ctx, d, now); err != nil {
		return nil, err
	}
	if d, err = s.find(ctx, d.ID); err != nil || d == nil {
		return nil, apperr.Wrap(apperr.Unavailable, err, "the AI budget could not be read; try again")
	}
	return status(limit, d.Spent, d.Reserved, resets), nil
}

// setMonthLimit makes effective the limit of userID's current month document. A document
// that had no limit has its spend read again from the usage log: calls without a budget do
// not touch it.
func (s *Service) setMonthLimit(ctx context.Context, userID string, effective *units) error {
	now := s.now()
	m, _ := monthKey(now)
	var limit *float64
	if effective != nil {
		l := effective.USD()
		limit = &l
	}
	for range 20 {
		d, err := s.load(ctx, userID, m, now)
		if err != nil {
			return err
		}
		spent := d.Spent
		if d.Limit == nil {
			if spent, err = s.recorded(ctx, userID, now); err != nil {
				return err
			}
		}
		set := bson.D{{Key: "limit", Value: limit}, {Key: "spent", Value: int64(spent)}}
		if effective != nil {
			set = append(set, bson.E{Key: "left", Value: int64(*effective - spent - d.Reserved)})
		}
		// Compare-and-set: the document is replaced only if no call moved it meanwhile.
		matched, err := s.update(ctx,
			bson.D{{Key: "_id", Value: d.ID}, {Key: "spent", Value: int64(d.Spent)}, {Key: "reserved", Value: int64(d.Reserved)}},
			bson.D{{Key: "$set", Value: set}})
		if err != nil {
			return err
		}
		if matched {
			return nil
		}
	}
	return apperr.E(apperr.Unavailable, "the AI budget is changing too fast to be set; try again")
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
	d := &month{ID: id, UserID: userID, Month: m, Spent: spent, Holds: map[string]hold{}}
	doc := bson.D{{Key: "_id", Value: id}, {Key: "userId", Value: userID}, {Key: "month", Value: m},
		{Key: "limit", Value: nil}, {Key: "spent", Value: int64(spent)}, {Key: "reserved", Value: int64(0)},
		{Key: "left", Value: int64(0)}, {Key: "holds", Value: bson.D{}}}
	if limit != nil {
		l := limit.USD()
		d.Limit, d.Left = &l, *limit-spent
		doc[3].Value, doc[6].Value = l, int64(d.Left)
	}
	if _, err := s.coll.InsertOne(ctx, doc); err != nil && !mongo.IsDuplicateKeyError(err) {
		return nil, apperr.Wrap(apperr.Unavailable, fmt.Errorf("budget: create month: %w", err), "the AI budget could not be checked; try again")
	} else if err != nil {
		return s.find(ctx, id) // another call created it first
	}
	return d, nil
}

// find returns the month document id, nil when there is none. A document whose amounts are
// doubles of dollars (written before amounts were kept in units) is removed, to be created
// again from the usage log.
func (s *Service) find(ctx context.Context, id string) (*month, error) {
	raw, err := s.coll.FindOne(ctx, bson.D{{Key: "_id", Value: id}}).Raw()
	if errors.Is(err, mongo.ErrNoDocuments) {
		return nil, nil
	}
	var d month
	if err == nil {
		if spent := raw.Lookup("spent"); spent.Type == bson.TypeDouble {
			_, err = s.coll.DeleteOne(ctx, bson.D{{Key: "_id", Value: id}, {Key: "spent", Value: spent}})
			if err == nil {
				return nil, nil
			}
		} else {
			err = bson.Unmarshal(raw, &d)
		}
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
				{Key: "$inc", Value: bson.D{{Key: "reserved", Value: -int64(h.Units)}, {Key: "left", Value: int64(h.Units)}}},
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
