package store_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/acme/app/internal/redact"
	"github.com/acme/app/internal/store"
)

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

// Ensure a plain MongoDB (TEST_MONGODB_URI, when set) is not taken for an embedded store.
func TestOpen_MongoDBIsNotRefused(t *testing.T) {
	uri := testMongoURI(t)
	ctx := ctxT(t)
	st, err := store.Open(ctx, store.Options{URI: uri})
	if err != nil {
		t.Fatalf("open %s: %v", redact.Userinfo(uri), err)
	}
	_ = st.Close(context.Background())
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
