package dbcheck_test

import (
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/bson"

	"github.com/acme/app/internal/apperr"
	"github.com/acme/app/internal/dbcheck"
	"github.com/acme/app/internal/memlimit"
)

// holdingServer is a fake MongoDB whose ping answers only once release is closed; entered
// receives one value per ping that reached it.
func holdingServer(t *testing.T) (uri string, entered <-chan struct{}, release chan struct{}) {
	t.Helper()
	in, rel := make(chan struct{}, 16), make(chan struct{})
	addr := fakeMongo(t, nil, func(name string, _ bson.Raw) fakeReply {
		if name == "ping" {
			in <- struct{}{}
			<-rel
		}
		return fakeReply{doc: bson.D{{Key: "databases", Value: bson.A{}}, {Key: "ok", Value: 1.0}}}
	})
	t.Cleanup(func() {
		select {
		case <-rel:
		default:
			close(rel)
		}
	})
	return "mongodb://" + addr + "/?directConnection=true", in, rel
}

// Ensure dbcheck.max_concurrent bounds the tests and queries running at once: past it a call
// is refused at once (503, Retry-After 1, code overloaded) and counted, never queued; below
// it, or with no bound (0), the call runs; a slot given back is taken again.
func TestConcurrencyBound(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		max         int
		hold        int // calls held by the server when another one comes
		wantRefused bool
	}{
		{"OKNoBound", 0, 2, false},
		{"OKUnderTheBound", 3, 2, false},
		{"ErrAtTheBound", 2, 2, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			uri, entered, release := holdingServer(t)
			s := newService(t, dbcheck.Options{MaxConcurrent: tt.max, Timeout: 10 * time.Second})
			in := dbcheck.TestInput{ConnectionString: uri, Database: "db"}
			results := make(chan error, tt.hold+1)
			for range tt.hold {
				go func() { _, err := s.Test(ctxT(t), in); results <- err }()
				<-entered
			}
			extra := make(chan error, 2)
			go func() { _, err := s.Test(ctxT(t), in); extra <- err }()
			if tt.wantRefused { // a query is refused as a test is
				go func() {
					_, err := s.Query(ctxT(t), dbcheck.QueryInput{ConnectionString: uri, Database: "db", Collection: "c"})
					extra <- err
				}()
			}
			if tt.wantRefused {
				for range 2 {
					select {
					case err := <-extra:
						wantKind(t, err, apperr.Unavailable, "dbcheck.max_concurrent")
						if e := apperr.As(err); e.RetryAfter != 1 || e.Code != memlimit.Overloaded {
							t.Fatalf("retryAfter=%d code=%q, want 1 and %q", e.RetryAfter, e.Code, memlimit.Overloaded)
						}
					case <-time.After(5 * time.Second):
						t.Fatal("a call past the bound waited instead of being refused")
					}
				}
				if got, want := s.Refused(), int64(2); got != want {
					t.Fatalf("refused=%d, want %d", got, want)
				}
			} else {
				select {
				case <-entered: // one of the two reached the server: it was let through
				case err := <-extra:
					t.Fatalf("a call under the bound failed: %v", err)
				case <-time.After(10 * time.Second):
					t.Fatal("a call under the bound never reached the server")
				}
				if got := s.Refused(); got != 0 {
					t.Fatalf("refused=%d, want 0", got)
				}
			}
			close(release)
			if !tt.wantRefused {
				if err := <-extra; err != nil {
					t.Fatalf("the call under the bound: %v", err)
				}
			}
			for range tt.hold {
				if err := <-results; err != nil {
					t.Fatalf("a held call: %v", err)
				}
			}
			if tt.wantRefused { // the slots are given back: a call runs again
				res, err := s.Test(ctxT(t), in)
				if err != nil || !res.Success {
					t.Fatalf("after the held calls ended: %+v, %v", res, err)
				}
			}
			if got := s.Refused(); tt.wantRefused && got != 2 || !tt.wantRefused && got != 0 {
				t.Fatalf("refused=%d at the end", got)
			}
		})
	}
}

// Ensure the refusal names the setting but never the connection string.
func TestConcurrencyBound_RefusalHasNoSecret(t *testing.T) {
	t.Parallel()
	uri, entered, release := holdingServer(t)
	s := newService(t, dbcheck.Options{MaxConcurrent: 1, Timeout: 10 * time.Second})
	secretURI := strings.Replace(uri, "mongodb://", "mongodb://user:hunter2@", 1)
	done := make(chan error, 1)
	go func() {
		_, err := s.Test(ctxT(t), dbcheck.TestInput{ConnectionString: uri, Database: "db"})
		done <- err
	}()
	<-entered
	_, err := s.Test(ctxT(t), dbcheck.TestInput{ConnectionString: secretURI, Database: "db"})
	if err == nil || strings.Contains(err.Error(), "hunter2") || strings.Contains(strings.Join(apperr.As(err).Messages, " "), "hunter2") {
		t.Fatalf("err=%v, want a refusal without the password", err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
