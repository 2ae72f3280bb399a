// Package keys owns personal API keys: `sk-app-` and 32 random bytes in base62, shown once at
// creation and stored only as their SHA-256 digest in the api_keys collection. A key acts as
// its user on the AI routes; Authenticate resolves one with a single indexed read, cached for
// at most CacheTTL so that a revocation takes effect everywhere within that time.
package keys

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/hashicorp/golang-lru/v2/expirable"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"

	"github.com/acme/app/internal/apperr"
	"github.com/acme/app/internal/store"
)

// Collection is the name of the collection this package owns.
const Collection = "api_keys"

// DigestField is the field of an api_keys document that holds the key's SHA-256 digest.
const DigestField = "digest"

// Prefix starts every key, so that a key is recognised as one (by people, secret scanners and
// the authentication middleware) without a lookup.
const Prefix = "sk-app-"

// secretLen is the length of the base62 text of 32 random bytes (62^43 > 2^256).
const secretLen = 43

// prefixLen is how many characters of the secret are kept in clear to recognise a key by:
// 62^8 keys share a prefix, so it tells nothing useful about the rest.
const prefixLen = 8

// CacheTTL is the longest a resolved key is trusted without reading the store again: the
// longest a revocation made elsewhere takes to be honoured.
const CacheTTL = 30 * time.Second

// MaxPerUser is the most keys a user may hold at once (revoked keys do not count): it bounds
// the key list, which anyone able to register could otherwise grow without end.
const MaxPerUser = 100

// lastUsedEvery is how often, at most, a key's lastUsedAt is written (per process).
const lastUsedEvery = time.Minute

// cacheMax bounds the cache; past it, the key used longest ago is forgotten.
const cacheMax = 10_000

// doc is a key as stored.
type doc struct {
	ID         string     `bson:"_id"`
	Digest     string     `bson:"digest"` // hex SHA-256 of the whole key (DigestField)
	UserID     string     `bson:"userId"`
	Email      string     `bson:"email,omitempty"` // the owner's e-mail when created (for operators)
	Name       string     `bson:"name"`
	Prefix     string     `bson:"prefix"` // the first characters after sk-app-, to recognise the key in a list
	CreatedAt  time.Time  `bson:"createdAt"`
	ExpiresAt  *time.Time `bson:"expiresAt,omitempty"`
	LastUsedAt *time.Time `bson:"lastUsedAt,omitempty"`
	RevokedAt  *time.Time `bson:"revokedAt,omitempty"`
}

// Key is a key as listed: never its secret.
type Key struct {
	ID         string     `json:"id"`
	Name       string     `json:"name"`
	Prefix     string     `json:"prefix"`
	UserID     string     `json:"userId"`
	Email      string     `json:"email,omitempty"`
	CreatedAt  time.Time  `json:"createdAt"`
	LastUsedAt *time.Time `json:"lastUsedAt"`
	ExpiresAt  *time.Time `json:"expiresAt"`
}

// Created is the answer to a creation: the key's fields and, this once, the key itself.
type Created struct {
	ID        string     `json:"id"`
	Name      string     `json:"name"`
	Key       string     `json:"key"`
	Prefix    string     `json:"prefix"`
	CreatedAt time.Time  `json:"createdAt"`
	ExpiresAt *time.Time `json:"expiresAt"`
}

// Owner is who a key acts for.
type Owner struct {
	UserID string
	KeyID  string
}

// Options configure the service.
type Options struct {
	Now func() time.Time // the clock (tests inject one); nil: time.Now
	TTL time.Duration    // cache lifetime, at most CacheTTL (0: CacheTTL)
}

// Service creates, lists, revokes and resolves keys.
type Service struct {
	coll *mongo.Collection
	now  func() time.Time
	ttl  time.Duration

	// cache holds resolved keys by digest. An entry is trusted for ttl after it was read and
	// kept lastUsedEvery after the key's last use, so that usedAt still spaces the writes of
	// lastUsedAt.
	cache *expirable.LRU[string, cached]

	// creating makes a create's count and insert one step in this process, so that concurrent
	// creates cannot pass MaxPerUser together. Keys are created rarely; one lock for all
	// users is enough.
	creating sync.Mutex
}

// cached is a resolved key and when it was read.
type cached struct {
	owner     Owner
	expiresAt time.Time // zero: never
	readAt    time.Time
	usedAt    time.Time // last lastUsedAt written by this process
}

// New returns the service on db's api_keys collection. It creates no index: the process that
// serves calls EnsureIndexes.
func New(db *mongo.Database, opts Options) *Service {
	s := &Service{coll: db.Collection(Collection), now: opts.Now, ttl: opts.TTL,
		cache: expirable.NewLRU[string, cached](cacheMax, nil, lastUsedEvery)}
	if s.now == nil {
		s.now = time.Now
	}
	if s.ttl <= 0 || s.ttl > CacheTTL {
		s.ttl = CacheTTL
	}
	return s
}

// EnsureIndexes creates the api_keys indexes: the unique digest a key is resolved by, and
// the user a listing filters on. Creating an existing index is a no-op.
func (s *Service) EnsureIndexes(ctx context.Context) error {
	if err := store.EnsureIndexes(ctx, s.coll,
		mongo.IndexModel{Keys: bson.D{{Key: DigestField, Value: 1}}, Options: options.Index().SetUnique(true).SetName("digest_1")},
		mongo.IndexModel{Keys: bson.D{{Key: "userId", Value: 1}}, Options: options.Index().SetName("userId_1")},
	); err != nil {
		return fmt.Errorf("keys: %w", err)
	}
	return nil
}

// Create makes a key for userID (email is kept for operators' listings) and returns it, the
// only time the secret is shown. Returns Invalid for a bad input, Conflict when the user holds
// MaxPerUser keys already.
func (s *Service) Create(ctx context.Context, userID, email string, in CreateInput) (*Created, error) {
	if msgs := in.Validate(); len(msgs) > 0 {
		return nil, apperr.Validation(msgs...)
	}
	s.creating.Lock()
	defer s.creating.Unlock()
	live, err := s.coll.CountDocuments(ctx, bson.D{{Key: "userId", Value: userID}, {Key: "revokedAt", Value: nil}},
		options.Count().SetLimit(MaxPerUser))
	if err != nil {
		return nil, fmt.Errorf("keys: count: %w", err)
	}
	if live >= MaxPerUser {
		return nil, apperr.E(apperr.Conflict, fmt.Sprintf("at most %d API keys per user: revoke one first", MaxPerUser))
	}
	key, err := newKey()
	if err != nil {
		return nil, err
	}
	now := s.now().UTC().Truncate(time.Millisecond)
	d := doc{ID: uuid.NewString(), Digest: Digest(key), UserID: userID, Email: email, Name: in.Name,
		Prefix: key[len(Prefix) : len(Prefix)+prefixLen], CreatedAt: now}
	if in.ExpiresInDays != nil {
		exp := now.AddDate(0, 0, *in.ExpiresInDays)
		d.ExpiresAt = &exp
	}
	if _, err := s.coll.InsertOne(ctx, d); err != nil {
		return nil, fmt.Errorf("keys: insert: %w", err)
	}
	return &Created{ID: d.ID, Name: d.Name, Key: key, Prefix: d.Prefix, CreatedAt: d.CreatedAt, ExpiresAt: d.ExpiresAt}, nil
}

// List returns the live keys of userID (every user's when userID is empty), newest first.
func (s *Service) List(ctx context.Context, userID string) ([]Key, error) {
	filter := bson.D{{Key: "revokedAt", Value: nil}}
	if userID != "" {
		filter = append(bson.D{{Key: "userId", Value: userID}}, filter...)
	}
	cur, err := s.coll.Find(ctx, filter, options.Find().SetSort(bson.D{{Key: "createdAt", Value: -1}}))
	if err != nil {
		return nil, fmt.Errorf("keys: list: %w", err)
	}
	var docs []doc
	if err := cur.All(ctx, &docs); err != nil {
		return nil, fmt.Errorf("keys: list: %w", err)
	}
	out := make([]Key, len(docs))
	for i, d := range docs {
		out[i] = Key{ID: d.ID, Name: d.Name, Prefix: d.Prefix, UserID: d.UserID, Email: d.Email, CreatedAt: d.CreatedAt,
			LastUsedAt: d.LastUsedAt, ExpiresAt: d.ExpiresAt}
	}
	return out, nil
}

// Revoke marks the key id as revoked. With userID set, only that user's key can be revoked
// (the HTTP API); with userID empty, any key (the operator CLI). Returns NotFound for an
// unknown, foreign or already revoked key. This process forgets the key at once; others
// within CacheTTL.
func (s *Service) Revoke(ctx context.Context, userID, id string) error {
	filter := bson.D{{Key: "_id", Value: id}, {Key: "revokedAt", Value: nil}}
	if userID != "" {
		filter = append(filter, bson.E{Key: "userId", Value: userID})
	}
	var d doc
	err := s.coll.FindOneAndUpdate(ctx, filter, bson.D{{Key: "$set", Value: bson.D{{Key: "revokedAt", Value: s.now().UTC()}}}}).Decode(&d)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return apperr.E(apperr.NotFound, "API key not found")
	}
	if err != nil {
		return fmt.Errorf("keys: revoke: %w", err)
	}
	s.cache.Remove(d.Digest)
	return nil
}

// Authenticate resolves a key to its owner. Returns Unauthorized for anything that is not a
// live key (malformed, unknown, revoked, expired).
func (s *Service) Authenticate(ctx context.Context, key string) (Owner, error) {
	if !LooksLikeKey(key) {
		return Owner{}, errUnauthorized
	}
	digest := Digest(key)
	now := s.now()
	c, ok := s.cache.Get(digest)
	if !ok || now.Sub(c.readAt) >= s.ttl || now.Before(c.readAt) {
		var d doc
		err := s.coll.FindOne(ctx, bson.D{{Key: DigestField, Value: digest}}).Decode(&d)
		if errors.Is(err, mongo.ErrNoDocuments) || (err == nil && d.RevokedAt != nil) {
			s.cache.Remove(digest)
			return Owner{}, errUnauthorized
		}
		if err != nil {
			return Owner{}, apperr.Wrap(apperr.Unavailable, fmt.Errorf("keys: find: %w", err), "API keys cannot be checked right now")
		}
		c = cached{owner: Owner{UserID: d.UserID, KeyID: d.ID}, readAt: now, usedAt: c.usedAt}
		if d.ExpiresAt != nil {
			c.expiresAt = *d.ExpiresAt
		}
	}
	if !c.expiresAt.IsZero() && !now.Before(c.expiresAt) {
		return Owner{}, errUnauthorized
	}
	touch := now.Sub(c.usedAt) >= lastUsedEvery
	if touch {
		c.usedAt = now
	}
	s.cache.Add(digest, c)
	if touch {
		// In the background: the request does not wait for it (at most one a minute per key).
		go s.touch(context.WithoutCancel(ctx), c.owner.KeyID, now)
	}
	return c.owner, nil
}

// touch records when a key was last used; a failure only leaves the date older.
func (s *Service) touch(ctx context.Context, id string, now time.Time) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	_, _ = s.coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: id}}, bson.D{{Key: "$set", Value: bson.D{{Key: "lastUsedAt", Value: now.UTC()}}}})
}

var errUnauthorized = apperr.E(apperr.Unauthorized, "Unauthorized")

// LooksLikeKey reports whether token has the shape of a key (so that it is not a JWT).
func LooksLikeKey(token string) bool {
	if !strings.HasPrefix(token, Prefix) || len(token)-len(Prefix) < secretLen || len(token) > 128 {
		return false
	}
	for _, c := range token[len(Prefix):] {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return true
}

// Digest is the stored form of a key: its SHA-256 in hex.
func Digest(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])
}

// newKey returns Prefix and 32 random bytes in base62, padded to secretLen characters.
func newKey() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("keys: random: %w", err)
	}
	text := new(big.Int).SetBytes(b[:]).Text(62)
	return Prefix + strings.Repeat("0", secretLen-len(text)) + text, nil
}
