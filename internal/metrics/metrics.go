// Package metrics holds the service's Prometheus metrics: one registry with every metric an
// operator's dashboards are written against, and small typed methods through which the HTTP
// layer, the AI proxy, the usage recorder and the store report to it.
//
// Every method is safe on a nil *Metrics (it does nothing), so a service built without metrics
// (tests, operator commands) needs no special case.
package metrics

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Unmatched is the route label of a request no route matched.
const Unmatched = "unmatched"

// Other is the label value standing for any model the price table does not know, and any
// HTTP method the API does not serve, so that label values stay bounded.
const Other = "other"

// Token kinds of app_ai_tokens_total.
const (
	KindPrompt     = "prompt"
	KindCompletion = "completion"
)

// storeProbeTimeout bounds the ping that app_store_up runs on a scrape.
const storeProbeTimeout = time.Second

// UsageStats is what the usage recorder reports: the records waiting to be written.
type UsageStats struct {
	QueueDepth int
}

// Metrics is the registry and its metrics.
type Metrics struct {
	reg *prometheus.Registry

	httpRequests *prometheus.CounterVec
	httpDuration *prometheus.HistogramVec

	aiRequests *prometheus.CounterVec
	aiTokens   *prometheus.CounterVec
	aiCost     *prometheus.CounterVec
	aiUpstream *prometheus.HistogramVec
	aiStreams  prometheus.Gauge

	usageBatches  prometheus.Counter
	usageFailures prometheus.Counter
	usageRejected prometheus.Counter

	ratelimitRejections *prometheus.CounterVec
	budgetRejections    prometheus.Counter

	mu         sync.RWMutex
	known      func(provider, model string) (string, bool)
	usageStats func() UsageStats
	buffered   BufferedSource
	dbcheck    DBCheckSource
	storePing  func(context.Context) error
}

// New returns the metrics on a fresh registry that also holds the Go and process collectors.
func New() *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		httpRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "app_http_requests_total",
			Help: "HTTP requests answered, by route pattern (unmatched: no route), method and status.",
		}, []string{"route", "method", "status"}),
		httpDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "app_http_request_duration_seconds",
			Help:    "Time from a request's arrival to the end of its handler, by route pattern and method.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
		}, []string{"route", "method"}),
		aiRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "app_ai_requests_total",
			Help: "AI provider calls, by provider, model (other: not in the price table) and status.",
		}, []string{"provider", "model", "status"}),
		aiTokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "app_ai_tokens_total",
			Help: "Tokens the providers reported, by provider, model and kind (prompt or completion).",
		}, []string{"provider", "model", "kind"}),
		aiCost: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "app_ai_cost_usd_total",
			Help: "Cost of AI calls in US dollars at the price table's prices, by provider and model.",
		}, []string{"provider", "model"}),
		aiUpstream: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "app_ai_upstream_duration_seconds",
			Help:    "Time the provider took to answer, by provider.",
			Buckets: []float64{.1, .25, .5, 1, 2.5, 5, 10, 20, 30, 60, 120},
		}, []string{"provider"}),
		aiStreams: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "app_ai_streams_in_flight",
			Help: "Streaming AI answers being relayed now.",
		}),
		usageBatches: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "app_usage_batches_written_total",
			Help: "Batches of usage records written to the store.",
		}),
		usageFailures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "app_usage_write_failures_total",
			Help: "Failed writes of a batch of usage records.",
		}),
		usageRejected: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "app_usage_records_rejected_total",
			Help: "Usage records dropped because the queue was full or the record could not be stored.",
		}),
		ratelimitRejections: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "app_ratelimit_rejections_total",
			Help: "Requests answered 429 by a rate limit, by limit (global or auth).",
		}, []string{"limit"}),
		budgetRejections: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "app_budget_rejections_total",
			Help: "AI requests refused because the caller's monthly budget was spent.",
		}),
	}
	m.reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.httpRequests, m.httpDuration,
		m.aiRequests, m.aiTokens, m.aiCost, m.aiUpstream, m.aiStreams,
		m.usageBatches, m.usageFailures, m.usageRejected,
		m.ratelimitRejections, m.budgetRejections,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "app_usage_queue_depth",
			Help: "Usage records waiting to be written.",
		}, m.queueDepth),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "app_buffered_bytes",
			Help: "Bytes of request bodies and provider answers held in memory now (server.max_buffered_bytes bounds them).",
		}, m.bufferedBytes),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "app_buffered_refusals_total",
			Help: "Requests answered 503 because their body or their provider's answer did not fit in server.max_buffered_bytes.",
		}, m.bufferedRefusals),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "app_dbcheck_refusals_total",
			Help: "MongoDB tests and queries (/api/storage/mongodb) answered 503 because dbcheck.max_concurrent were running.",
		}, m.dbcheckRefusals),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "app_store_up",
			Help: "1 when the application's MongoDB store answered a ping at scrape time, else 0.",
		}, m.storeUp),
	)
	return m
}

// Registry returns the registry, for tests and for registering more collectors.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the registry in Prometheus' text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// SetKnownModels sets how a model becomes a label value: known returns the price table's name
// for it (a dated snapshot is counted under its family's entry) and whether the table has one;
// any other model is counted as "other", so that callers cannot create label values. Until it
// is set, every model is "other".
func (m *Metrics) SetKnownModels(known func(provider, model string) (name string, ok bool)) {
	if m == nil {
		return
	}
	m.mu.Lock()
	m.known = known
	m.mu.Unlock()
}

// SetUsageSource sets where app_usage_queue_depth is read from at scrape time.
func (m *Metrics) SetUsageSource(stats func() UsageStats) {
	if m == nil {
		return
	}
	m.mu.Lock()
	m.usageStats = stats
	m.mu.Unlock()
}

// BufferedSource is where app_buffered_bytes and app_buffered_refusals_total are read from
// at scrape time (a *memlimit.Limit).
type BufferedSource interface {
	Used() int64
	Refused() int64
}

// SetBufferedSource sets the bound on buffered bytes the metrics report.
func (m *Metrics) SetBufferedSource(src BufferedSource) {
	if m == nil {
		return
	}
	m.mu.Lock()
	m.buffered = src
	m.mu.Unlock()
}

func (m *Metrics) bufferedSource() BufferedSource {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.buffered
}

func (m *Metrics) bufferedBytes() float64 {
	if src := m.bufferedSource(); src != nil {
		return float64(src.Used())
	}
	return 0
}

func (m *Metrics) bufferedRefusals() float64 {
	if src := m.bufferedSource(); src != nil {
		return float64(src.Refused())
	}
	return 0
}

// DBCheckSource is where app_dbcheck_refusals_total is read from at scrape time (a
// *dbcheck.Service).
type DBCheckSource interface {
	Refused() int64
}

// SetDBCheckSource sets the MongoDB utilities whose refusals the metrics report.
func (m *Metrics) SetDBCheckSource(src DBCheckSource) {
	if m == nil {
		return
	}
	m.mu.Lock()
	m.dbcheck = src
	m.mu.Unlock()
}

func (m *Metrics) dbcheckRefusals() float64 {
	m.mu.RLock()
	src := m.dbcheck
	m.mu.RUnlock()
	if src == nil {
		return 0
	}
	return float64(src.Refused())
}

// SetStore sets the ping app_store_up runs at scrape time (bounded by one second).
func (m *Metrics) SetStore(ping func(context.Context) error) {
	if m == nil {
		return
	}
	m.mu.Lock()
	m.storePing = ping
	m.mu.Unlock()
}

// ObserveHTTP counts one answered request. route is the matched pattern (Unmatched if none).
func (m *Metrics) ObserveHTTP(route, method string, status int, d time.Duration) {
	if m == nil {
		return
	}
	if route == "" {
		route = Unmatched
	}
	method = boundMethod(method)
	m.httpRequests.WithLabelValues(route, method, statusText(status)).Inc()
	m.httpDuration.WithLabelValues(route, method).Observe(d.Seconds())
}

// ObserveAI counts one provider call: its status (e.g. "200", "error", "timeout"), the tokens
// the provider reported, its cost in USD and the time the provider took.
func (m *Metrics) ObserveAI(provider, model, status string, prompt, completion int64, cost float64, upstream time.Duration) {
	if m == nil {
		return
	}
	model = m.boundModel(provider, model)
	m.aiRequests.WithLabelValues(provider, model, status).Inc()
	if prompt > 0 {
		m.aiTokens.WithLabelValues(provider, model, KindPrompt).Add(float64(prompt))
	}
	if completion > 0 {
		m.aiTokens.WithLabelValues(provider, model, KindCompletion).Add(float64(completion))
	}
	if cost > 0 {
		m.aiCost.WithLabelValues(provider, model).Add(cost)
	}
	if upstream > 0 {
		m.aiUpstream.WithLabelValues(provider).Observe(upstream.Seconds())
	}
}

// StreamStarted counts a streaming answer in flight; StreamEnded must follow it.
func (m *Metrics) StreamStarted() {
	if m != nil {
		m.aiStreams.Inc()
	}
}

// StreamEnded ends what StreamStarted counted.
func (m *Metrics) StreamEnded() {
	if m != nil {
		m.aiStreams.Dec()
	}
}

// UsageBatchWritten counts a batch of usage records written.
func (m *Metrics) UsageBatchWritten() {
	if m != nil {
		m.usageBatches.Inc()
	}
}

// UsageWriteFailed counts a failed write of a batch of usage records.
func (m *Metrics) UsageWriteFailed() {
	if m != nil {
		m.usageFailures.Inc()
	}
}

// UsageRecordsRejected counts n usage records dropped.
func (m *Metrics) UsageRecordsRejected(n int) {
	if m != nil && n > 0 {
		m.usageRejected.Add(float64(n))
	}
}

// RateLimited counts a request refused by the named limit ("global" or "auth").
func (m *Metrics) RateLimited(limit string) {
	if m != nil {
		m.ratelimitRejections.WithLabelValues(limit).Inc()
	}
}

// BudgetRejected counts an AI request refused for a spent budget.
func (m *Metrics) BudgetRejected() {
	if m != nil {
		m.budgetRejections.Inc()
	}
}

func (m *Metrics) boundModel(provider, model string) string {
	m.mu.RLock()
	known := m.known
	m.mu.RUnlock()
	if model == "" || known == nil {
		return Other
	}
	if name, ok := known(provider, model); ok && name != "" {
		return name
	}
	return Other
}

func (m *Metrics) queueDepth() float64 {
	m.mu.RLock()
	stats := m.usageStats
	m.mu.RUnlock()
	if stats == nil {
		return 0
	}
	return float64(stats().QueueDepth)
}

func (m *Metrics) storeUp() float64 {
	m.mu.RLock()
	ping := m.storePing
	m.mu.RUnlock()
	if ping == nil {
		return 0
	}
	ctx, cancel := context.WithTimeout(context.Background(), storeProbeTimeout)
	defer cancel()
	if ping(ctx) != nil {
		return 0
	}
	return 1
}

// boundMethod keeps the method label to the methods HTTP defines.
func boundMethod(method string) string {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return method
	}
	return Other
}

// statusTexts holds the status labels "100" to "599", built once.
var statusTexts = func() []string {
	out := make([]string, 600)
	for i := 100; i < len(out); i++ {
		out[i] = strconv.Itoa(i)
	}
	return out
}()

func statusText(code int) string {
	if code >= 100 && code < len(statusTexts) {
		return statusTexts[code]
	}
	return Other
}

// AIRequests, AITokens, AICost and HTTPRequests expose the vectors to tests.
func (m *Metrics) AIRequests() *prometheus.CounterVec { return m.aiRequests }

// AITokens is app_ai_tokens_total.
func (m *Metrics) AITokens() *prometheus.CounterVec { return m.aiTokens }

// AICost is app_ai_cost_usd_total.
func (m *Metrics) AICost() *prometheus.CounterVec { return m.aiCost }

// HTTPRequests is app_http_requests_total.
func (m *Metrics) HTTPRequests() *prometheus.CounterVec { return m.httpRequests }

// RateLimitRejections is app_ratelimit_rejections_total.
func (m *Metrics) RateLimitRejections() *prometheus.CounterVec { return m.ratelimitRejections }
