package store

import (
	"context"
	"fmt"
	"sync"

	"go.mongodb.org/mongo-driver/mongo"
)

// The embedded store (FerretDB v1) applies an update as a read followed by a write, with no
// isolation between connections: two concurrent $inc on one document can both read the old
// value, and one increment is lost. So every read-modify-write update (UpdateOne/UpdateMany
// with $inc or a conditional filter, FindOneAndUpdate, BulkWrite with updates) made through a
// client of an embedded store that this process owns runs under one lock per store, taken
// with Serialize. On MongoDB, Serialize calls fn at once: the server makes each update atomic.
//
// The lock covers this process only. That is why a second `app serve` may not use another
// process's embedded store (see ErrEmbeddedReplica), while operator commands, which make no
// concurrent increments, may.

// gates maps the driver client of each embedded store this process owns to its lock: a
// channel with room for one, so that a waiter can give up when its context ends.
var gates sync.Map // *mongo.Client -> chan struct{}

func register(c *mongo.Client)   { gates.Store(c, make(chan struct{}, 1)) }
func unregister(c *mongo.Client) { gates.Delete(c) }

// Serialize runs fn under the update lock of the embedded store c belongs to, when this
// process owns one; otherwise (MongoDB, or another process's embedded store) it runs fn
// directly. Use it around every read-modify-write update. It returns ctx's error, wrapped,
// when ctx ends before the lock is free, and fn's error otherwise.
func Serialize(ctx context.Context, c *mongo.Client, fn func() error) error {
	g, ok := gates.Load(c)
	if !ok {
		return fn()
	}
	gate := g.(chan struct{})
	select {
	case gate <- struct{}{}:
	case <-ctx.Done():
		return fmt.Errorf("store: wait for the update lock: %w", ctx.Err())
	}
	defer func() { <-gate }()
	return fn()
}

// Serialize runs fn under this store's update lock (see the package function Serialize).
func (s *Store) Serialize(ctx context.Context, fn func() error) error {
	return Serialize(ctx, s.client, fn)
}
