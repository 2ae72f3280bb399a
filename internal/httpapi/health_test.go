package httpapi

import (
	"context"
	"encoding/json"
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
