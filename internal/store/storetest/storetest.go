// Package storetest gives tests a real MongoDB: one embedded store per test binary (or the
// server named by TEST_MONGODB_URI), and a fresh database per test, dropped when it ends, so
// tests may run in parallel. A package using it calls Main from its TestMain, which stops the
// embedded store and removes its files when the tests end.
package storetest

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/mongo"

	"github.com/acme/app/internal/store"
)

var (
	once    sync.Once
	shared  *store.Store
	dataDir string
	openErr error
	seq     atomic.Int64
)

// Main runs the package's tests, then closes the shared store, if one was opened, and removes
// its data directory, which would otherwise be left in the temporary directory by every run.
// Call it from TestMain: func TestMain(m *testing.M) { storetest.Main(m) }.
func Main(m *testing.M) {
	code := m.Run()
	if shared != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		_ = shared.Close(ctx)
		cancel()
	}
	if dataDir != "" {
		_ = os.RemoveAll(dataDir)
	}
	os.Exit(code)
}

// Store returns the store shared by the tests of this binary, closed by Main.
func Store(tb testing.TB) *store.Store {
	tb.Helper()
	once.Do(func() {
		dir, err := os.MkdirTemp("", "storetest-")
		if err != nil {
			openErr = err
			return
		}
		dataDir = dir
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		shared, openErr = store.Open(ctx, store.Options{URI: os.Getenv("TEST_MONGODB_URI"), DataDir: dir})
	})
	if openErr != nil {
		tb.Fatalf("storetest: open store: %v", openErr)
	}
	return shared
}

// DBName returns a database name unique to this test, dropped when the test ends.
func DBName(tb testing.TB) string {
	tb.Helper()
	st := Store(tb)
	name := fmt.Sprintf("t%d_%d_%s", os.Getpid(), seq.Add(1), sanitize(tb.Name()))
	if len(name) > 60 {
		name = name[:60]
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = st.DB(name).Drop(ctx)
	})
	return name
}

// DB returns a fresh database unique to this test, dropped when the test ends.
func DB(tb testing.TB) *mongo.Database {
	tb.Helper()
	return Store(tb).DB(DBName(tb))
}

func sanitize(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return '_'
	}, s)
}
