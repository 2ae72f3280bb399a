package store_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"go.mongodb.org/mongo-driver/bson"

	"github.com/acme/app/internal/store"
	"github.com/acme/app/internal/store/storetest"
)

// Ensure no increment is lost when 8 goroutines (so several driver connections) each make 100
// $inc on one document through Serialize, and a conditional $inc guarded at 100 stops at 100
// with 100 modifications: the embedded store alone loses most of them.
func TestSerialize_ConcurrentIncrements(t *testing.T) {
	t.Parallel()
	const workers, each = 8, 100
	tests := []struct {
		name     string
		filter   bson.D // added to {_id}
		wantN    int64
		wantMods int64
	}{
		{"unconditional", nil, workers * each, workers * each},
		{"guarded at 100", bson.D{{Key: "n", Value: bson.D{{Key: "$lt", Value: 100}}}}, 100, 100},
	}
	st := storetest.Store(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := ctxT(t)
			coll := st.DB(storetest.DBName(t)).Collection("counters")
			if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: "c"}, {Key: "n", Value: int64(0)}}); err != nil {
				t.Fatal(err)
			}
			filter := append(bson.D{{Key: "_id", Value: "c"}}, tt.filter...)
			var mods atomic.Int64
			var wg sync.WaitGroup
			errs := make(chan error, workers)
			for range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range each {
						err := st.Serialize(ctx, func() error {
							res, err := coll.UpdateOne(ctx, filter, bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}})
							if err == nil {
								mods.Add(res.ModifiedCount)
							}
							return err
						})
						if err != nil {
							errs <- err
							return
						}
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			var got struct {
				N int64 `bson:"n"`
			}
			if err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: "c"}}).Decode(&got); err != nil {
				t.Fatal(err)
			}
			if got.N != tt.wantN || mods.Load() != tt.wantMods {
				t.Fatalf("n = %d after %d modifications, want %d after %d", got.N, mods.Load(), tt.wantN, tt.wantMods)
			}
		})
	}
}

// Ensure Serialize gives up when its context ends while another holder keeps the lock.
func TestSerialize_ContextEnds(t *testing.T) {
	ctx := ctxT(t)
	st, err := store.Open(ctx, store.Options{DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close(context.Background())
	held, release := make(chan struct{}), make(chan struct{})
	go func() {
		_ = st.Serialize(ctx, func() error { close(held); <-release; return nil })
	}()
	<-held
	short, cancel := context.WithCancel(ctx)
	cancel()
	ran := false
	err = st.Serialize(short, func() error { ran = true; return nil })
	close(release)
	if !errors.Is(err, context.Canceled) || ran {
		t.Fatalf("Serialize = %v (ran %v), want context.Canceled without running", err, ran)
	}
}

// Ensure `app serve`'s exclusive open refuses a URI that names another process's embedded
// store, with one line saying replicas need MongoDB, while a shared open (an operator
// command) is allowed.
func TestOpen_RefusesAnotherProcessEmbeddedStore(t *testing.T) {
	ctx := ctxT(t)
	dir := t.TempDir()
	owner, err := store.Open(ctx, store.Options{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer owner.Close(context.Background())

	_, err = store.Open(ctx, store.Options{URI: owner.URI()})
	if !errors.Is(err, store.ErrEmbeddedReplica) {
		t.Fatalf("exclusive open of the owner's URI: err = %v, want ErrEmbeddedReplica", err)
	}
	if msg := err.Error(); strings.Contains(msg, "\n") || !strings.Contains(msg, "replicas need MongoDB") {
		t.Fatalf("message %q: want one line saying replicas need MongoDB", msg)
	}
	op, err := store.Open(ctx, store.Options{URI: owner.URI(), Shared: true})
	if err != nil {
		t.Fatalf("shared open: %v", err)
	}
	_ = op.Close(ctx)
}

// Ensure a plain MongoDB (TEST_MONGODB_URI, when set) is not taken for an embedded store, and
// Serialize on it does not lock: the server makes each update atomic.
func TestOpen_MongoDBIsNotRefused(t *testing.T) {
	uri := testMongoURI(t)
	ctx := ctxT(t)
	st, err := store.Open(ctx, store.Options{URI: uri})
	if err != nil {
		t.Fatalf("open %s: %v", store.Redact(uri), err)
	}
	defer st.Close(context.Background())
	inner := make(chan error, 1)
	err = st.Serialize(ctx, func() error {
		inner <- st.Serialize(ctx, func() error { return nil }) // would deadlock under a lock
		return nil
	})
	if err != nil || <-inner != nil {
		t.Fatal(err)
	}
}

// testMongoURI returns TEST_MONGODB_URI, or skips the test when it is not set.
func testMongoURI(t *testing.T) string {
	t.Helper()
	uri := os.Getenv("TEST_MONGODB_URI")
	if uri == "" {
		t.Skip("TEST_MONGODB_URI not set")
	}
	return uri
}
