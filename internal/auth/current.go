package auth

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/hashicorp/golang-lru/v2/expirable"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/bson/primitive"
	"go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"

	"github.com/acme/app/internal/apperr"
)

// CallerCacheTTL is how long the state of a user an authenticated request acts for is reused:
// a deleted user is refused, and a granted or revoked role applies, at most this long after
// the change.
const CallerCacheTTL = 30 * time.Second

// maxCachedCallers bounds the cache; past it, the user read longest ago is forgotten.
const maxCachedCallers = 100_000

// Current returns the caller with the user id of a verified token as the user is stored now
// (at most CallerCacheTTL ago): its e-mail and current roles, not those the token carries.
// Returns Unauthorized when no such user exists (it was deleted, or the id is not one), and
// Unavailable when the store cannot answer.
func (s *Service) Current(ctx context.Context, userID string) (Caller, error) {
	now := s.now()
	if c, found, ok := s.callers.get(userID, now); ok {
		if !found {
			return Caller{}, apperr.E(apperr.Unauthorized, "Unauthorized")
		}
		return c, nil
	}
	id, err := primitive.ObjectIDFromHex(userID)
	if err != nil {
		return Caller{}, apperr.E(apperr.Unauthorized, "Unauthorized")
	}
	var u struct {
		Email string   `bson:"email"`
		Roles []string `bson:"roles"`
	}
	err = s.users.FindOne(ctx, bson.M{"_id": id}, options.FindOne().SetProjection(bson.M{"email": 1, "roles": 1})).Decode(&u)
	switch {
	case errors.Is(err, mongo.ErrNoDocuments):
		s.callers.put(userID, Caller{}, false, now)
		return Caller{}, apperr.E(apperr.Unauthorized, "Unauthorized")
	case err != nil:
		return Caller{}, apperr.Wrap(apperr.Unavailable, err, "Service Unavailable")
	}
	c := Caller{ID: userID, Email: u.Email, Roles: u.Roles}
	s.callers.put(userID, c, true, now)
	return c, nil
}

// SetCallerTTL shortens how long a caller's state is reused (0: read on every request); it
// never lengthens it past CallerCacheTTL. Call it before serving.
func (s *Service) SetCallerTTL(d time.Duration) {
	s.callers.ttl.Store(int64(min(max(d, 0), CallerCacheTTL)))
}

// callerCache maps user ids to their state when last read (found false: no such user).
type callerCache struct {
	ttl atomic.Int64 // a time.Duration: how long an entry is reused, at most CallerCacheTTL
	lru *expirable.LRU[string, cachedCaller]
}

type cachedCaller struct {
	caller Caller
	found  bool
	at     time.Time
}

// init makes the cache, entries reused for ttl. An entry also leaves the cache
// CallerCacheTTL after it was read by the clock of the process (the service's clock may be
// another, in tests), or when maxCachedCallers users were read since.
func (c *callerCache) init(ttl time.Duration) {
	c.ttl.Store(int64(ttl))
	c.lru = expirable.NewLRU[string, cachedCaller](maxCachedCallers, nil, CallerCacheTTL)
}

// get returns the entry for id if it is younger than the TTL (ok false otherwise).
func (c *callerCache) get(id string, now time.Time) (Caller, bool, bool) {
	e, ok := c.lru.Get(id)
	if ttl := time.Duration(c.ttl.Load()); !ok || now.Sub(e.at) >= ttl || now.Before(e.at) {
		return Caller{}, false, false
	}
	return e.caller, e.found, true
}

func (c *callerCache) put(id string, caller Caller, found bool, now time.Time) {
	c.lru.Add(id, cachedCaller{caller: caller, found: found, at: now})
}

// forget drops id, so that this process sees a change it made at once.
func (c *callerCache) forget(id string) { c.lru.Remove(id) }
