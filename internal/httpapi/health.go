package httpapi

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// healthTTL is how long a database check stays fresh; healthTimeout bounds one check.
const (
	healthTTL     = time.Second
	healthTimeout = time.Second
)

// Health is the body of GET /api/health.
type Health struct {
	Status    string `json:"status"` // ok or error
	Timestamp string `json:"timestamp"`
	Service   string `json:"service"`
	Version   string `json:"version"`
}

// dbState caches the database's health so that a health request costs no round trip: a stale
// state is refreshed in the background while the last known one is answered.
type dbState struct {
	db         Pinger
	first      sync.Once // the first check, which every request waits for
	ok         atomic.Bool
	checked    atomic.Int64 // unix nanos of the last finished check
	refreshing atomic.Bool
}

func (s *dbState) check() {
	ctx, cancel := context.WithTimeout(context.Background(), healthTimeout)
	defer cancel()
	s.ok.Store(s.db.Ping(ctx) == nil)
	s.checked.Store(time.Now().UnixNano())
}

func (s *dbState) healthy() bool {
	if s.db == nil {
		return true
	}
	s.first.Do(s.check)
	if time.Since(time.Unix(0, s.checked.Load())) > healthTTL && s.refreshing.CompareAndSwap(false, true) {
		go func() {
			defer s.refreshing.Store(false)
			s.check()
		}()
	}
	return s.ok.Load()
}

func handleHealth(db Pinger, version string) http.Handler {
	state := &dbState{db: db}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := Health{Status: "ok", Timestamp: time.Now().UTC().Format(time.RFC3339Nano), Service: "backend-api", Version: version}
		status := http.StatusOK
		if !state.healthy() {
			h.Status, status = "error", http.StatusServiceUnavailable
		}
		encode(w, status, h)
	})
}

func handleRoot() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		encode(w, http.StatusOK, map[string]string{"message": "Backend API is running. See /api/health."})
	})
}
