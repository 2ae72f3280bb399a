package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"testing"

	"github.com/acme/app/internal/usage"
)

type recorderState usage.RecorderState

func (s recorderState) RecorderState() usage.RecorderState { return usage.RecorderState(s) }

// Ensure health reports the usage recorder: degraded (still 200) while it is behind, error
// (503) while it refuses new AI calls, ok otherwise; with its state under checks.recorder.
func TestHealth_Recorder(t *testing.T) {
	t.Parallel()
	up := pingFunc(func(context.Context) error { return nil })
	tests := []struct {
		name       string
		state      usage.RecorderState
		wantCode   int
		wantStatus string
	}{
		{"ok", usage.RecorderState{Status: usage.StateOK, QueueSize: 10}, 200, "ok"},
		{"queue full", usage.RecorderState{Status: usage.StateDegraded, Queued: 10, QueueSize: 10}, 200, "degraded"},
		{"writes failing", usage.RecorderState{Status: usage.StateDegraded, WritesFailing: true}, 200, "degraded"},
		{"overflow full", usage.RecorderState{Status: usage.StateRefusing, Overflow: 5}, 503, "error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rec := httptest.NewRecorder()
			handleHealth(up, recorderState(tt.state), "1.0.0").ServeHTTP(rec, httptest.NewRequest("GET", "/api/health", nil))
			var body Health
			if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
				t.Fatal(err)
			}
			if rec.Code != tt.wantCode || body.Status != tt.wantStatus || body.Checks == nil ||
				body.Checks.Database != "ok" || body.Checks.Recorder == nil || *body.Checks.Recorder != tt.state {
				t.Fatalf("health = %d %s", rec.Code, rec.Body.String())
			}
		})
	}
}

// pings answers Ping with its errors in turn.
type pings struct{ errs []error }

func (p *pings) Ping(context.Context) error {
	err := p.errs[0]
	p.errs = p.errs[1:]
	return err
}

// Ensure the database is reported down on a failed first check, and afterwards only on the
// second failure in a row: one slow ping does not take the instance out of its load balancer.
func TestHealth_DatabaseDownAfterTwoFailures(t *testing.T) {
	t.Parallel()
	down := errors.New("timeout")
	for _, tc := range []struct {
		name string
		errs []error
		want []bool // the state after each check
	}{
		{"first fails", []error{down, nil}, []bool{false, true}},
		{"one failure", []error{nil, down, nil}, []bool{true, true, true}},
		{"two in a row", []error{nil, down, down, nil}, []bool{true, true, false, true}},
		{"apart", []error{nil, down, nil, down, nil}, []bool{true, true, true, true, true}},
	} {
		s := &dbState{db: &pings{errs: tc.errs}}
		for i, want := range tc.want {
			s.check()
			if s.ok.Load() != want {
				t.Errorf("%s: after check %d the database is ok=%v, want %v", tc.name, i+1, s.ok.Load(), want)
			}
		}
	}
}
