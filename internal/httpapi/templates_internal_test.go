package httpapi

import (
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/acme/app/internal/templates"
)

// Ensure a template answer that cannot be encoded is a 500 in the envelope whose cause is
// logged once, with the request, and never shown to the client.
func TestAnswerTemplates_EncodeFailureLogged(t *testing.T) {
	t.Parallel()
	logs := &SyncBuffer{}
	h := observe(slog.New(slog.NewJSONHandler(logs, nil)), false, 1<<20, nil, nil, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		answerTemplates(w, r, http.StatusOK, map[string]float64{"v": math.Inf(1)}, templates.SourceCore, nil)
	}))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/api/spaces/s/properties/templates", nil))
	if got, want := rec.Code, http.StatusInternalServerError; got != want {
		t.Fatalf("status=%d, want %d", got, want)
	}
	if e := decodeEnvelope(t, rec); e.Message != "Internal server error" || strings.Contains(rec.Body.String(), "unsupported") {
		t.Fatalf("body = %s", rec.Body.String())
	}
	log := logs.String()
	if strings.Count(log, `"msg":"internal error"`) != 1 || !strings.Contains(log, "unsupported value: +Inf") ||
		!strings.Contains(log, `"path":"/api/spaces/s/properties/templates"`) {
		t.Fatalf("log = %s, want one line with the cause and the path", log)
	}
}
