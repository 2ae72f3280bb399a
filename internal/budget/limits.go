package budget

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"

	"github.com/acme/app/internal/apperr"
)

// versionID is the _id of the document whose counter every change of a user's own limit
// increments, in whichever process it is made: readers poll that one document and reload the
// limits only when it moved.
const versionID = "~limits"

// limitsTTL is how long the limits read stay fresh: a limit set anywhere takes effect in a
// process within about this long.
const limitsTTL = time.Second

// limitTable is every user's own limit, as read from the store at most limitsTTL ago.
type limitTable struct {
	coll *mongo.Collection

	mu      sync.RWMutex
	own     map[string]units // users with a limit of their own
	version int64
	loaded  bool
	sets    uint64 // local writes so far: a refresh that began before one must not undo it

	afterRead func() // tests: called between a refresh's read of the limits and its update

	checkedAt  atomic.Int64 // unix nanos of the last version check
	refreshing atomic.Bool
}

// get returns userID's own limit (ok false: none of their own). The first call reads every
// limit; later calls answer from memory and, once the table is older than limitsTTL, have
// one background check of the version document bring it up to date.
func (t *limitTable) get(ctx context.Context, userID string) (units, bool, error) {
	t.mu.RLock()
	loaded := t.loaded
	t.mu.RUnlock()
	if !loaded {
		if err := t.refresh(ctx); err != nil {
			return 0, false, err
		}
	} else if time.Since(time.Unix(0, t.checkedAt.Load())) > limitsTTL && t.refreshing.CompareAndSwap(false, true) {
		go func() {
			defer t.refreshing.Store(false)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_ = t.refresh(ctx) // kept as it was; the next call tries again
		}()
	}
	t.mu.RLock()
	defer t.mu.RUnlock()
	l, ok := t.own[userID]
	return l, ok, nil
}

// refresh reads the version document and, when it moved (or on the first call), every limit.
func (t *limitTable) refresh(ctx context.Context) error {
	var v struct {
		N int64 `bson:"n"`
	}
	err := t.coll.FindOne(ctx, bson.D{{Key: "_id", Value: versionID}}).Decode(&v)
	if err != nil && err != mongo.ErrNoDocuments {
		return apperr.Wrap(apperr.Unavailable, fmt.Errorf("budget: read limits version: %w", err), "the AI budget could not be read; try again")
	}
	t.mu.RLock()
	same := t.loaded && t.version == v.N
	sets := t.sets
	t.mu.RUnlock()
	if same {
		t.checkedAt.Store(time.Now().UnixNano())
		return nil
	}
	cur, err := t.coll.Find(ctx, bson.D{{Key: "month", Value: bson.D{{Key: "$exists", Value: false}}}})
	if err != nil {
		return apperr.Wrap(apperr.Unavailable, fmt.Errorf("budget: read limits: %w", err), "the AI budget could not be read; try again")
	}
	var docs []userDoc
	if err := cur.All(ctx, &docs); err != nil {
		return apperr.Wrap(apperr.Unavailable, fmt.Errorf("budget: read limits: %w", err), "the AI budget could not be read; try again")
	}
	own := make(map[string]units, len(docs))
	for _, d := range docs {
		if d.Limit != nil && d.ID != versionID {
			own[d.UserID] = toUnits(*d.Limit)
		}
	}
	if t.afterRead != nil {
		t.afterRead()
	}
	t.mu.Lock()
	if t.sets != sets {
		// A limit was set here while this read was under way: what was read may predate it.
		// Keep the table (it has the write) and its old version, so the next check reads again.
		t.mu.Unlock()
		return nil
	}
	t.own, t.version, t.loaded = own, v.N, true
	t.mu.Unlock()
	t.checkedAt.Store(time.Now().UnixNano())
	return nil
}

// changed brings the table up to date now: a limit may have changed in another process.
func (t *limitTable) changed() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := t.refresh(ctx); err != nil {
		t.checkedAt.Store(0) // the next call tries again
	}
}

// set records userID's own limit (nil: none) in the store, moves the version, and updates
// this process's table at once.
func (t *limitTable) set(ctx context.Context, userID string, limit *float64) error {
	op := bson.D{{Key: "$set", Value: bson.D{{Key: "userId", Value: userID}, {Key: "limit", Value: limit}}}}
	if _, err := t.coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: userID}}, op, options.Update().SetUpsert(true)); err != nil {
		return apperr.Wrap(apperr.Unavailable, fmt.Errorf("budget: set limit: %w", err), "the AI budget could not be saved")
	}
	if _, err := t.coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: versionID}},
		bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: int64(1)}}}}, options.Update().SetUpsert(true)); err != nil {
		return apperr.Wrap(apperr.Unavailable, fmt.Errorf("budget: set limit: %w", err), "the AI budget could not be saved")
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.sets++
	if t.own == nil {
		t.own = map[string]units{}
	}
	if limit == nil {
		delete(t.own, userID)
	} else {
		t.own[userID] = toUnits(*limit)
	}
	return nil
}
