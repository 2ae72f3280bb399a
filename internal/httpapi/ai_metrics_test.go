package httpapi

import (
	"context"
	"io"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/acme/app/internal/ai"
	"github.com/acme/app/internal/ai/aitest"
	"github.com/acme/app/internal/metrics"
)

// Ensure AI calls move the AI and usage metrics by the right amounts: two answered calls and
// one streamed (counted per provider, model and status, with their tokens and cost), one
// failure under the provider's status, no stream left in flight, and the records' batches.
func TestMetrics_AICallsCounted(t *testing.T) {
	t.Parallel()
	answer := aitest.JSON(200, aitest.OpenAIAnswer("gpt-4o-mini", "hi there", 5, 8, 0))
	lv := newLiveAI(t, "openai", answer, answer,
		aitest.Stream(aitest.StreamOptions{Pieces: []string{"a ", "b"}}),
		aitest.JSON(400, map[string]any{"error": map[string]any{"message": "bad", "type": "invalid_request_error"}}))
	prices, err := ai.LoadPrices("", nil)
	if err != nil {
		t.Fatal(err)
	}
	lv.metrics.SetKnownModels(func(provider, model string) (string, bool) {
		name, _, ok := prices.Lookup(provider, model)
		return name, ok
	})
	bodies := []string{
		`{"messages":[{"role":"user","content":"x"}],"model":"gpt-4o-mini"}`,
		`{"messages":[{"role":"user","content":"x"}],"model":"gpt-4o-mini"}`,
		`{"messages":[{"role":"user","content":"x"}],"model":"gpt-4o-mini","stream":true}`,
		`{"messages":[{"role":"user","content":"x"}],"model":"gpt-4o-mini"}`,
	}
	for _, b := range bodies {
		resp := lv.post(t, context.Background(), "openai", b)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	lv.records(t, 4)

	m := lv.metrics
	if got := testutil.ToFloat64(m.AIRequests().WithLabelValues("openai", "gpt-4o-mini", "200")); got != 3 {
		t.Errorf("answered calls %v, want 3", got)
	}
	if got := testutil.ToFloat64(m.AIRequests().WithLabelValues("openai", "gpt-4o-mini", "400")); got != 1 {
		t.Errorf("refused calls %v, want 1", got)
	}
	if got := testutil.ToFloat64(m.AITokens().WithLabelValues("openai", "gpt-4o-mini", "completion")); got < 16 {
		t.Errorf("completion tokens %v, want at least 16 (8 per answered call)", got)
	}
	if got := testutil.ToFloat64(m.AICost().WithLabelValues("openai", "gpt-4o-mini")); got <= 0 {
		t.Errorf("cost %v, want > 0", got)
	}
	text := gather(t, m)
	for name, want := range map[string]float64{"app_ai_streams_in_flight": 0, "app_usage_queue_depth": 0, "app_usage_records_rejected_total": 0} {
		if got, ok := metricValue(text, name); !ok || got != want {
			t.Errorf("%s = %v (found %v), want %v", name, got, ok, want)
		}
	}
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if n, _ := metricValue(gather(t, m), "app_usage_batches_written_total"); n >= 1 {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Error("no usage batch counted in app_usage_batches_written_total")
}

// gather answers a scrape of m, as Prometheus reads it.
func gather(t *testing.T, m *metrics.Metrics) string {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	return rec.Body.String()
}

// metricValue reads the value of an unlabelled sample from a scrape.
func metricValue(text, name string) (float64, bool) {
	for _, line := range strings.Split(text, "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			return f, err == nil
		}
	}
	return 0, false
}
