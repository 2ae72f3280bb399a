// Package store opens the program's MongoDB connection: an external deployment named by a URI,
// or, with no URI, the embedded MongoDB-compatible server (FerretDB with its SQLite handler)
// running in-process under the data directory. Either way the services talk to it through the
// ordinary mongo-driver, so the production code path is the one that runs everywhere.
package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"
	"go.mongodb.org/mongo-driver/mongo/readpref"

	"github.com/acme/app/internal/apperr"
	"github.com/acme/app/internal/redact"
)

// Options says which MongoDB to open.
type Options struct {
	// URI of an external MongoDB. Empty: the embedded store under DataDir.
	URI string
	// DataDir holds the embedded store's files, its lock and its URI file.
	DataDir string
	// Shared lets this process use the embedded store of another process that holds DataDir
	// (an operator command beside a running `app serve`), through the URI file it wrote.
	// Without it, a DataDir in use is an error, and so is a URI that names the embedded store
	// of another process (ErrEmbeddedReplica).
	Shared bool
	// LockWait bounds the wait for DataDir while a process that serves no one (an operator
	// command) holds it; 0: DefaultLockWait. A server holding it is never waited for.
	LockWait time.Duration
	// Listen is the embedded store's address (host:port); empty: a random loopback port.
	Listen string
	// Standalone serves the embedded store for other processes (`app store serve`): it is not
	// marked as owned by this process, so `app serve` replicas may share it through its URI.
	Standalone bool
	// Logger receives the store's own messages; nil discards them.
	Logger *slog.Logger
}

// Store is an open MongoDB connection.
type Store struct {
	client     *mongo.Client
	uri        string
	embedded   *embedded // nil unless this process runs the embedded server
	unclean    bool      // the embedded store's last owner did not stop in order
	standalone bool      // the embedded store is served for other processes
	log        *slog.Logger
}

// ErrLocked is returned when DataDir is held by another process and Options.Shared is false.
var ErrLocked = errors.New("the data directory is in use by another process")

// Open connects to the MongoDB named by opts and checks that it answers a ping.
func Open(ctx context.Context, opts Options) (*Store, error) {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Store{uri: opts.URI, log: log, standalone: opts.Standalone}
	if opts.URI == "" {
		e, uri, err := openEmbedded(ctx, opts, log)
		if err != nil {
			return nil, err
		}
		s.embedded, s.uri = e, uri
	}
	client, err := Connect(ctx, s.uri)
	if err != nil {
		s.closeEmbedded()
		return nil, err
	}
	s.client = client
	pingCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := s.Ping(pingCtx); err != nil {
		_ = s.Close(context.Background())
		return nil, fmt.Errorf("store: ping %s: %w", redact.URI(s.uri), err)
	}
	switch {
	case s.embedded != nil && opts.Standalone:
		if err := s.clearOwner(pingCtx); err != nil {
			_ = s.Close(context.Background())
			return nil, err
		}
	case s.embedded != nil:
		if err := s.markOwner(pingCtx, opts.DataDir); err != nil {
			_ = s.Close(context.Background())
			return nil, err
		}
	case !opts.Shared:
		if err := s.checkNotEmbedded(pingCtx); err != nil {
			_ = s.Close(context.Background())
			return nil, err
		}
	}
	return s, nil
}

// Connect returns a driver client for uri with the program's defaults (short server selection,
// so a dead server is an error within seconds rather than a hang). Returns Invalid, without the
// password, when uri is not a connection string the driver can parse.
func Connect(ctx context.Context, uri string) (*mongo.Client, error) {
	o := options.Client().ApplyURI(uri).SetServerSelectionTimeout(5 * time.Second).SetConnectTimeout(5 * time.Second)
	if err := o.Validate(); err != nil {
		var dnsErr *net.DNSError
		if !errors.As(err, &dnsErr) { // not a failed SRV or TXT lookup: the string itself
			return nil, invalidURI(uri, err)
		}
	}
	client, err := mongo.Connect(ctx, o)
	if err != nil {
		return nil, fmt.Errorf("store: connect %s: %w", redact.URI(uri), err)
	}
	return client, nil
}

// CheckURI returns Invalid, without the password, when uri is not a connection string the
// driver can parse; it connects to nothing and looks nothing up (a mongodb+srv:// string's DNS
// records are looked up when it is used, so only Connect finds those wrong).
func CheckURI(uri string) error {
	if strings.HasPrefix(uri, "mongodb+srv://") {
		return nil
	}
	if err := options.Client().ApplyURI(uri).Validate(); err != nil {
		return invalidURI(uri, err)
	}
	return nil
}

func invalidURI(uri string, err error) error {
	return apperr.Wrap(apperr.Invalid, errors.New(redact.Text(err.Error(), uri)),
		redact.URI(uri)+" is not a valid MongoDB connection string")
}

// Client returns the driver client.
func (s *Store) Client() *mongo.Client { return s.client }

// DB returns the named database.
func (s *Store) DB(name string) *mongo.Database { return s.client.Database(name) }

// URI returns the connection string in use (for the embedded store, its loopback address).
func (s *Store) URI() string { return s.uri }

// Embedded reports whether this process runs the embedded server.
func (s *Store) Embedded() bool { return s.embedded != nil }

// Created reports whether this process opened the embedded store of a data directory that
// held none: the store is new and empty (a first run, or a mistyped directory).
func (s *Store) Created() bool { return s.embedded != nil && s.embedded.created }

// OnWrite has fn called after every write command on collection coll of database db, from
// any client of the embedded store this process owns, once the write is applied and before
// its client gets the answer: a process that keeps a copy of that collection's data learns of
// a change made elsewhere (an operator command) before that change is reported done. fn runs
// on the writer's connection: keep it short. OnWrite reports false, and never calls fn, for
// any other store (MongoDB, another process's embedded store): there, poll for changes.
func (s *Store) OnWrite(db, coll string, fn func()) bool {
	if s.embedded == nil {
		return false
	}
	s.embedded.gate.onWrite(writeHook{db: db, coll: coll, fn: fn})
	return true
}

// Ping checks that the server answers.
func (s *Store) Ping(ctx context.Context) error {
	return s.client.Ping(ctx, readpref.Primary())
}

// Close disconnects, then stops the embedded server and releases the data directory.
func (s *Store) Close(ctx context.Context) error {
	var err error
	if s.client != nil {
		if s.embedded != nil && !s.standalone {
			err = s.markStopped(ctx)
		}
		err = errors.Join(err, s.client.Disconnect(ctx))
	}
	s.closeEmbedded()
	return err
}

func (s *Store) closeEmbedded() {
	if s.embedded != nil {
		s.embedded.close()
		s.embedded = nil
	}
}

// EnsureIndexes creates the indexes in models on coll; creating an existing index is a no-op.
// It creates them one per command: FerretDB v1 panics when one createIndexes names several
// indexes that already exist.
//
// On a server that reads no filter but _id equality through an index (the embedded store:
// FerretDB on SQLite, whose explain says filterPushdown false for any other field), a
// non-unique index would cost every write of coll and serve no read: only the unique ones are
// created (they enforce their constraint there too), and a non-unique one of models that an
// earlier version created is dropped.
func EnsureIndexes(ctx context.Context, coll *mongo.Collection, models ...mongo.IndexModel) error {
	unusable := len(models) > 0 && !ReadsSecondaryIndexes(ctx, coll)
	var drop []string
	for _, m := range models {
		if unusable && !unique(m) {
			drop = append(drop, indexName(m))
			continue
		}
		if _, err := coll.Indexes().CreateOne(ctx, m); err != nil {
			return fmt.Errorf("store: create index on %s: %w", coll.Name(), err)
		}
	}
	if len(drop) == 0 {
		return nil
	}
	specs, err := coll.Indexes().ListSpecifications(ctx)
	if err != nil {
		return fmt.Errorf("store: list indexes of %s: %w", coll.Name(), err)
	}
	for _, spec := range specs {
		if slices.Contains(drop, spec.Name) {
			if _, err := coll.Indexes().DropOne(ctx, spec.Name); err != nil {
				return fmt.Errorf("store: drop index %s of %s: %w", spec.Name, coll.Name(), err)
			}
		}
	}
	return nil
}

// ReadsSecondaryIndexes reports whether coll's server can answer a filter on a field other
// than _id from an index: false only when its explain of such a find says filterPushdown false
// (FerretDB's extension; MongoDB's explain has no such field, and an error counts as true).
func ReadsSecondaryIndexes(ctx context.Context, coll *mongo.Collection) bool {
	var res struct {
		FilterPushdown *bool `bson:"filterPushdown"`
	}
	err := coll.Database().RunCommand(ctx, bson.D{{Key: "explain", Value: bson.D{
		{Key: "find", Value: coll.Name()},
		{Key: "filter", Value: bson.D{{Key: "f", Value: ""}}},
	}}}).Decode(&res)
	return err != nil || res.FilterPushdown == nil || *res.FilterPushdown
}

// unique reports whether m declares a unique index.
func unique(m mongo.IndexModel) bool {
	return m.Options != nil && m.Options.Unique != nil && *m.Options.Unique
}

// indexName returns m's name: the one its options give, else MongoDB's default
// (field_direction pairs joined with "_").
func indexName(m mongo.IndexModel) string {
	if m.Options != nil && m.Options.Name != nil {
		return *m.Options.Name
	}
	keys, _ := m.Keys.(bson.D)
	parts := make([]string, 0, 2*len(keys))
	for _, k := range keys {
		parts = append(parts, k.Key, fmt.Sprint(k.Value))
	}
	return strings.Join(parts, "_")
}
