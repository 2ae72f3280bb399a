package httpapi

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/acme/app/internal/usage"
)

// healthTTL is how long a database check stays fresh; healthTimeout bounds one check.
const (
	healthTTL     = time.Second
	healthTimeout = 2 * time.Second
)

// Health is the body of GET /api/health.
type Health struct {
	Status    string        `json:"status"` // ok, degraded or error
	Timestamp string        `json:"timestamp"`
	Service   string        `json:"service"`
	Version   string        `json:"version"`
	Checks    *HealthChecks `json:"checks,omitempty"`
}

// HealthChecks are the parts of the health answer: the database and the usage recorder.
type HealthChecks struct {
	Database string               `json:"database"` // ok or error
	Recorder *usage.RecorderState `json:"recorder,omitempty"`
}

// RecorderHealth is the usage recorder as the health check sees it.
type RecorderHealth interface {
	RecorderState() usage.RecorderState
}

// dbState caches the database's health so that a health request costs no round trip: a stale
// state is refreshed in the background while the last known one is answered.
type dbState struct {
	db         Pinger
	first      sync.Once // the first check, which every request waits for
	ok         atomic.Bool
	failed     atomic.Int32 // checks failed in a row
	checked    atomic.Int64 // unix nanos of the last finished check
	refreshing atomic.Bool
}

// check pings the database. The state turns to down on the second failure in a row (or the
// first check's), so that one slow ping under a burst of load does not take the instance out
// of its load balancer.
func (s *dbState) check() {
	ctx, cancel := context.WithTimeout(context.Background(), healthTimeout)
	defer cancel()
	if s.db.Ping(ctx) == nil {
		s.failed.Store(0)
		s.ok.Store(true)
	} else if n := s.failed.Add(1); n >= 2 || s.checked.Load() == 0 {
		s.ok.Store(false)
	}
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

// handleHealth answers 200 with status "ok", or "degraded" while the usage recorder is
// behind (its queue full, records in its overflow, or its writes failing: calls are still
// answered and recorded later); 503 with status "error" when the database does not answer or
// the recorder refuses new AI calls (its overflow is full), so that a load balancer sends
// traffic elsewhere. rec may be nil.
func handleHealth(db Pinger, rec RecorderHealth, version string) http.Handler {
	state := &dbState{db: db}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := Health{Status: "ok", Timestamp: time.Now().UTC().Format(time.RFC3339Nano), Service: "backend-api", Version: version,
			Checks: &HealthChecks{Database: "ok"}}
		status := http.StatusOK
		if rec != nil {
			st := rec.RecorderState()
			h.Checks.Recorder = &st
			switch st.Status {
			case usage.StateDegraded:
				h.Status = "degraded"
			case usage.StateRefusing:
				h.Status, status = "error", http.StatusServiceUnavailable
			}
		}
		if !state.healthy() {
			h.Checks.Database = "error"
			h.Status, status = "error", http.StatusServiceUnavailable
		}
		encode(w, status, h)
	})
}

// HealthHandler answers GET /api/health as the API does, without the API's middleware (no
// rate limit, no access log, no request metrics): serve mounts it on the metrics listener,
// for load balancers and orchestrators that probe more often than a client's rate limit
// allows. rec may be nil.
func HealthHandler(db Pinger, rec *usage.Service, version string) http.Handler {
	return handleHealth(db, recorderHealth(rec), version)
}

func handleRoot() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		encode(w, http.StatusOK, map[string]string{"message": "Backend API is running. See /api/health."})
	})
}

// recorderHealth is svc as a RecorderHealth, nil when there is no usage service.
func recorderHealth(svc *usage.Service) RecorderHealth {
	if svc == nil {
		return nil
	}
	return svc
}
