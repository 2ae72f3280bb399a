package metrics_test

import (
	"context"
	"errors"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/acme/app/internal/metrics"
)

func TestEveryNamedMetricIsExposed(t *testing.T) {
	t.Parallel()
	m := metrics.New()
	// Vectors appear once they have a child: touch each.
	m.ObserveHTTP("/api/health", "GET", 200, time.Millisecond)
	m.ObserveAI("openai", "gpt-x", "200", 1, 1, 0.1, time.Second)
	m.RateLimited("global")
	srv := httptest.NewServer(m.Handler())
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, name := range []string{
		"app_http_requests_total", "app_http_request_duration_seconds", "app_ai_requests_total",
		"app_ai_tokens_total", "app_ai_cost_usd_total", "app_ai_upstream_duration_seconds",
		"app_ai_streams_in_flight", "app_usage_queue_depth", "app_usage_batches_written_total",
		"app_usage_write_failures_total", "app_usage_records_rejected_total",
		"app_ratelimit_rejections_total", "app_budget_rejections_total", "app_store_up",
		"app_dbcheck_refusals_total", "go_goroutines", "process_start_time_seconds",
	} {
		if !strings.Contains(string(body), "\n"+name) && !strings.HasPrefix(string(body), name) {
			t.Errorf("scrape lacks %s", name)
		}
	}
}

func TestAILabelsAreBounded(t *testing.T) {
	t.Parallel()
	m := metrics.New()
	m.SetKnownModels(func(provider, model string) (string, bool) {
		if provider == "openai" && strings.HasPrefix(model, "gpt-known") {
			return "gpt-known", true // a dated snapshot counts under its family
		}
		return "", false
	})
	m.ObserveAI("openai", "gpt-known", "200", 5, 2, 0.15, 2*time.Second)
	m.ObserveAI("openai", "gpt-known-2026-01-01", "200", 5, 3, 0.10, 2*time.Second)
	m.ObserveAI("openai", "made-up-model-123", "200", 7, 3, 0, time.Second)
	m.ObserveAI("openai", "made-up-model-456", "502", 0, 0, 0, 0)
	tests := []struct {
		name  string
		got   float64
		wantV float64
	}{
		{"known model calls", testutil.ToFloat64(m.AIRequests().WithLabelValues("openai", "gpt-known", "200")), 2},
		{"unknown models are other", testutil.ToFloat64(m.AIRequests().WithLabelValues("openai", "other", "200")), 1},
		{"unknown failure is other", testutil.ToFloat64(m.AIRequests().WithLabelValues("openai", "other", "502")), 1},
		{"prompt tokens", testutil.ToFloat64(m.AITokens().WithLabelValues("openai", "gpt-known", "prompt")), 10},
		{"completion tokens", testutil.ToFloat64(m.AITokens().WithLabelValues("openai", "gpt-known", "completion")), 5},
		{"other prompt tokens", testutil.ToFloat64(m.AITokens().WithLabelValues("openai", "other", "prompt")), 7},
		{"cost", testutil.ToFloat64(m.AICost().WithLabelValues("openai", "gpt-known")), 0.25},
	}
	for _, tt := range tests {
		if tt.got != tt.wantV {
			t.Errorf("%s: %v, want %v", tt.name, tt.got, tt.wantV)
		}
	}
}

func TestGaugesReadTheirSources(t *testing.T) {
	t.Parallel()
	m := metrics.New()
	m.StreamStarted()
	m.StreamStarted()
	m.StreamEnded()
	m.SetUsageSource(func() metrics.UsageStats { return metrics.UsageStats{QueueDepth: 42} })
	m.UsageBatchWritten()
	m.UsageWriteFailed()
	m.UsageRecordsRejected(3)
	m.BudgetRejected()
	m.SetDBCheckSource(refusals(5))
	up := true
	m.SetStore(func(context.Context) error {
		if up {
			return nil
		}
		return errors.New("down")
	})
	want := map[string]float64{
		"app_ai_streams_in_flight":         1,
		"app_usage_queue_depth":            42,
		"app_usage_batches_written_total":  1,
		"app_usage_write_failures_total":   1,
		"app_usage_records_rejected_total": 3,
		"app_budget_rejections_total":      1,
		"app_dbcheck_refusals_total":       5,
		"app_store_up":                     1,
	}
	got := gather(t, m)
	for name, v := range want {
		if got[name] != v {
			t.Errorf("%s = %v, want %v", name, got[name], v)
		}
	}
	up = false
	if v := gather(t, m)["app_store_up"]; v != 0 {
		t.Errorf("app_store_up with a failing ping = %v, want 0", v)
	}
}

// refusals is a DBCheckSource that has refused n calls.
type refusals int64

func (r refusals) Refused() int64 { return int64(r) }

func TestNilMetricsIsANoOp(t *testing.T) {
	t.Parallel()
	var m *metrics.Metrics
	m.ObserveHTTP("x", "GET", 200, 0)
	m.ObserveAI("openai", "m", "200", 1, 1, 1, 1)
	m.StreamStarted()
	m.StreamEnded()
	m.RateLimited("global")
	m.BudgetRejected()
	m.UsageBatchWritten()
	m.UsageWriteFailed()
	m.UsageRecordsRejected(1)
	m.SetDBCheckSource(refusals(1))
}

// gather sums each unlabelled metric family's first sample.
func gather(t *testing.T, m *metrics.Metrics) map[string]float64 {
	t.Helper()
	mfs, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, s := range mf.GetMetric() {
			switch {
			case s.Counter != nil:
				out[mf.GetName()] += s.Counter.GetValue()
			case s.Gauge != nil:
				out[mf.GetName()] += s.Gauge.GetValue()
			}
		}
	}
	return out
}

// BenchmarkObserveHTTP is the cost metrics add to every request.
func BenchmarkObserveHTTP(b *testing.B) {
	m := metrics.New()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			m.ObserveHTTP("GET /api/health", "GET", 200, time.Millisecond)
		}
	})
}
