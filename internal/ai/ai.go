// Package ai proxies chat completions to OpenAI, Anthropic and Gemini on their own wire APIs,
// normalizes the answers, prices them and hands each request to the usage recorder.
package ai

import (
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/google/uuid"

	"github.com/acme/app/internal/apperr"
	"github.com/acme/app/internal/memlimit"
	"github.com/acme/app/internal/usage"
)

// Completion is the normalized answer of the three AI endpoints.
type Completion struct {
	Text      string  `json:"text"`
	Usage     Usage   `json:"usage"`
	Model     string  `json:"model"`
	Provider  string  `json:"provider"`
	Cost      float64 `json:"cost"`
	RequestID string  `json:"requestId"`

	// FinishReason is why the answer ended, in OpenAI's words: stop, length, content_filter,
	// tool_calls ("" when the provider did not say).
	FinishReason string `json:"-"`
	// StopSequence is the stop sequence that ended the answer, when the provider names it
	// (Anthropic); FinishReason is then "stop".
	StopSequence string `json:"-"`
	// Refusal is the model's refusal to answer, which OpenAI sends in place of the text (the
	// /api endpoints answer an empty text).
	Refusal string `json:"-"`
	// ToolCalls are the tools the answer calls (none on the three endpoints, which offer no
	// tools).
	ToolCalls    []ToolCall `json:"-"`
	CachedTokens int64      `json:"-"` // prompt tokens read from the provider's cache
	// CacheWriteTokens are the prompt tokens written to the provider's cache (Anthropic).
	CacheWriteTokens int64 `json:"-"`
	ReasoningTokens  int64 `json:"-"` // completion tokens spent on reasoning/thinking
}

// Usage counts tokens by one rule for every provider: cached prompt tokens are prompt tokens,
// reasoning/thinking tokens are completion tokens, total = prompt + completion.
type Usage struct {
	PromptTokens     int64 `json:"promptTokens"`
	CompletionTokens int64 `json:"completionTokens"`
	TotalTokens      int64 `json:"totalTokens"`
}

// ProviderConfig is one provider's settings (ai.<name>.*).
type ProviderConfig struct {
	APIKey       string
	BaseURL      string
	DefaultModel string
}

// Recorder receives one record per completed request.
type Recorder interface {
	Record(ctx context.Context, r usage.Record) error
}

// Budget reserves a call's worst-case cost before the provider is called and settles it after.
type Budget interface {
	// Reserve holds worstCaseUSD of userID's budget; an error (apperr kind PaymentRequired,
	// Invalid or Unavailable) refuses the call before the provider is called. worstCaseUSD is
	// Unpriced when the call's model has no price: a budget cannot bound what it costs.
	Reserve(ctx context.Context, userID string, worstCaseUSD float64) (Reservation, error)
}

// Unpriced is the worst case of a call whose model has no price.
var Unpriced = math.Inf(1)

// Reservation is settled once with the call's real cost.
type Reservation interface {
	Settle(ctx context.Context, actualUSD float64)
	// Limited reports whether the hold bounds the call (its user has a budget): then the
	// call must not cost more than the worst case reserved.
	Limited() bool
}

// openMaxTokens is the output cap sent for a call that sets none on a surface keeping the
// provider's defaults (ChatInput.ProviderDefaults) when a cap is needed all the same:
// Anthropic requires one, and a caller with a budget is held to the worst case reserved.
const openMaxTokens = 4096

// Observer is told of every call that reached a provider and of every budget refusal, for
// metrics. *metrics.Metrics implements it.
type Observer interface {
	ObserveAI(provider, model, status string, prompt, completion int64, cost float64, upstream time.Duration)
	StreamStarted()
	StreamEnded()
	BudgetRejected()
}

type nopObserver struct{}

func (nopObserver) ObserveAI(string, string, string, int64, int64, float64, time.Duration) {}
func (nopObserver) StreamStarted()                                                         {}
func (nopObserver) StreamEnded()                                                           {}
func (nopObserver) BudgetRejected()                                                        {}

// Options configure the service.
type Options struct {
	Providers map[string]ProviderConfig // by name: openai, anthropic, gemini
	// Timeout is ai.timeout: a whole call, retries included; for a streamed call, the time to
	// its first piece (text or a tool call), whatever events come before it.
	Timeout time.Duration
	// StreamIdleTimeout is ai.stream_idle_timeout: the longest gap between two events of a
	// streamed answer (default 60s).
	StreamIdleTimeout time.Duration
	// StreamMaxDuration is ai.stream_max_duration: the longest a streamed answer may run
	// (default 10m); past it the stream ends with an error. A budget holds a reservation at
	// least this long.
	StreamMaxDuration time.Duration
	// MaxIdleConnsPerHost is ai.max_idle_conns_per_host: keep-alive connections kept per
	// provider host (default 256). Ignored when Transport is set.
	MaxIdleConnsPerHost int
	// Memory is the process's bound on buffered bytes (server.max_buffered_bytes), which
	// providers' answers are read within (nil: none); an answer that does not fit fails the
	// call with 503 and code Overloaded.
	Memory    *memlimit.Limit
	Prices    *Prices  // nil: the embedded table
	Recorder  Recorder // nil: nothing is recorded
	Budget    Budget   // nil: no budget is checked
	Observer  Observer // nil: nothing is observed
	Logger    *slog.Logger
	Transport http.RoundTripper // nil: NewTransport(MaxIdleConnsPerHost)

	MaxRetries    int           // retries after the first attempt (default 2; negative: none)
	RetryBase     time.Duration // first backoff (default 500ms), doubled per retry
	RetryCap      time.Duration // longest wait between attempts, Retry-After included (default 8s)
	DefaultMaxTok int           // maxTokens when absent (default 1000)
	Now           func() time.Time
}

// Service completes chats.
type Service struct {
	mem     *memlimit.Limit
	cfg     map[string]ProviderConfig
	timeout time.Duration
	idle    time.Duration
	maxDur  time.Duration // of a stream
	prices  *Prices
	rec     Recorder
	budget  Budget
	obs     Observer
	log     *slog.Logger
	client  *http.Client
	retries int
	base    time.Duration
	cap     time.Duration
	maxTok  int
	now     func() time.Time

	noTemperature *modelCache[bool] // models that refuse a non-default temperature
	keys          *regexp.Regexp    // every configured API key (see redact)
}

// NewTransport returns the HTTP transport for provider calls: net/http's, with HTTP/2 where
// the provider offers it, proxies from the environment (HTTPS_PROXY, NO_PROXY), TLS 1.2 or
// later, bounded dials and handshakes, no transparent gzip, and maxIdlePerHost keep-alive connections per provider
// (default 256). The per-call deadline comes from the context.
func NewTransport(maxIdlePerHost int) *http.Transport {
	if maxIdlePerHost <= 0 {
		maxIdlePerHost = 256
	}
	dialer := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	return &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           dialer.DialContext,
		ForceAttemptHTTP2:     true,
		TLSClientConfig:       &tls.Config{MinVersion: tls.VersionTLS12},
		TLSHandshakeTimeout:   10 * time.Second,
		MaxIdleConns:          2 * maxIdlePerHost,
		MaxIdleConnsPerHost:   maxIdlePerHost,
		IdleConnTimeout:       90 * time.Second,
		ExpectContinueTimeout: time.Second,
		// Answers are asked for uncompressed: they are a few kilobytes of JSON or a stream of
		// small events that must pass as they come.
		DisableCompression: true,
	}
}

// newClient returns the one client of every provider call. A provider's redirect is never
// followed: the 3xx is the answer (a failure), so a request carrying the API key is never
// re-sent to another host.
func newClient(rt http.RoundTripper) *http.Client {
	return &http.Client{
		Transport:     rt,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// New returns the service.
func New(opts Options) *Service {
	s := &Service{
		mem: opts.Memory, cfg: opts.Providers, timeout: opts.Timeout, idle: opts.StreamIdleTimeout, prices: opts.Prices,
		rec: opts.Recorder, budget: opts.Budget, obs: opts.Observer, log: opts.Logger, retries: opts.MaxRetries, base: opts.RetryBase,
		cap: opts.RetryCap, maxTok: opts.DefaultMaxTok, now: opts.Now,
		noTemperature: newModelCache[bool](), keys: keysPattern(opts.Providers),
	}
	if s.timeout <= 0 {
		s.timeout = 60 * time.Second
	}
	if s.idle <= 0 {
		s.idle = 60 * time.Second
	}
	if s.maxDur = opts.StreamMaxDuration; s.maxDur <= 0 {
		s.maxDur = 10 * time.Minute
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.obs == nil {
		s.obs = nopObserver{}
	}
	if s.prices == nil {
		s.prices, _ = LoadPrices("", s.log)
	}
	rt := opts.Transport
	if rt == nil {
		rt = NewTransport(opts.MaxIdleConnsPerHost)
	}
	s.client = newClient(rt)
	if s.retries == 0 {
		s.retries = 2
	} else if s.retries < 0 {
		s.retries = 0
	}
	if s.base <= 0 {
		s.base = 500 * time.Millisecond
	}
	if s.cap <= 0 {
		s.cap = 8 * time.Second
	}
	if s.maxTok <= 0 {
		s.maxTok = 1000
	}
	if s.now == nil {
		s.now = time.Now
	}
	return s
}

// Providers returns the names of the providers the service knows.
func Providers() []string { return slices.Clone(providerNames) }

// NewRequestID returns a new request id: a UUID version 7, which begins with the time. The id
// is the _id of the request's usage record, so records arrive in the order of their ids and
// each insert appends to the end of the _id index instead of landing on a random page of it
// (on the embedded store, random UUIDs cost the AI proxy nearly a third of its throughput
// once the log holds a few hundred thousand records: see docs/performance.md).
func NewRequestID() string { return uuid.Must(uuid.NewV7()).String() }

// RequestIDFor returns id when it is a UUID, else a new request id. Callers pass an id the
// server made (NewRequestID): it becomes a usage record's _id, so it must be unique, which a
// client-chosen id is not.
func RequestIDFor(id string) string {
	if _, err := uuid.Parse(id); err != nil || len(id) != 36 {
		return NewRequestID()
	}
	return id
}

// Complete sends in to the named provider on behalf of userID and returns the normalized answer.
// Every call that reaches a provider is recorded, success or failure, even if ctx is canceled.
//
// Returns NotFound for an unknown provider; Invalid (an array of messages) when in breaks the
// endpoint's rules; Unavailable when the provider has no API key, or the server's account is out
// of credit; what the Budget answers when it refuses the call; Invalid with the provider's
// message when it refuses the request (400/404) or a Gemini prompt is blocked; RateLimited (with
// RetryAfter) when the provider keeps answering 429; Upstream when the key is refused, the
// provider keeps failing or answers nonsense; UpstreamTimeout past ai.timeout.
func (s *Service) Complete(ctx context.Context, userID, providerName string, in ChatInput) (*Completion, error) {
	return s.run(ctx, userID, providerName, in, nil)
}

// Stream is Complete with the answer's text and tool calls handed to onDelta piece by piece
// as they arrive.
// An error returned before onDelta was first called means nothing was sent (the caller may still
// answer a JSON error); onDelta returning an error cancels the upstream call.
//
// The errors are Complete's; ai.timeout bounds the time to the first piece and
// ai.stream_idle_timeout, after it, the gap between two events. Retries happen only before the provider
// starts its answer. A call canceled mid-stream is recorded as canceled with the usage the
// provider reported until then.
func (s *Service) Stream(ctx context.Context, userID, providerName string, in ChatInput, onDelta func(Delta) error) (*Completion, error) {
	if onDelta == nil {
		onDelta = func(Delta) error { return nil }
	}
	return s.run(ctx, userID, providerName, in, onDelta)
}

// run is Complete (onDelta nil) and Stream.
func (s *Service) run(ctx context.Context, userID, providerName string, in ChatInput, onDelta func(Delta) error) (*Completion, error) {
	ep, ok := providers[providerName]
	if !ok {
		return nil, apperr.E(apperr.NotFound, "unknown AI provider "+providerName)
	}
	if err := in.validate(&ep.spec); err != nil {
		return nil, err
	}
	cfg, err := s.ready(providerName)
	if err != nil {
		return nil, err
	}
	id := RequestIDFor(in.RequestID)
	c := &call{model: in.Model, messages: in.Messages, temperature: ep.spec.defaultTemperature, maxTokens: s.maxTok,
		topP: in.TopP, stop: in.Stop, stream: onDelta != nil, tools: in.Tools, toolChoice: in.ToolChoice,
		parallel: in.ParallelToolCalls, format: in.ResponseFormat, idPrefix: toolCallIDPrefix(id)}
	if err := ep.provider.check(c); err != nil {
		return nil, err
	}
	if c.model == "" {
		c.model = cfg.DefaultModel
	}
	if in.Temperature != nil {
		c.temperature = *in.Temperature
	}
	switch {
	case in.MaxTokens != nil:
		c.maxTokens = *in.MaxTokens
	case in.ProviderDefaults:
		c.maxTokens = 0 // not sent (see openMaxTokens)
	}
	_, refuses := s.noTemperature.Get(modelKey{providerName, c.model})
	c.sendTemperature = !refuses && (in.Temperature != nil || !in.ProviderDefaults)

	hold, err := s.reserve(ctx, userID, func() float64 { return s.worstCase(providerName, c) })
	if err != nil {
		return nil, err
	}
	if c.maxTokens == 0 && hold != nil && hold.Limited() {
		c.maxTokens = openMaxTokens // the bound the reservation counted
	}

	start := s.now()
	var res *result
	var attempts int
	var uerr *upstreamError
	if onDelta == nil {
		res, attempts, uerr = s.do(ctx, ep, cfg, c)
	} else {
		s.obs.StreamStarted()
		res, attempts, uerr = s.stream(ctx, ep, cfg, c, onDelta)
		s.obs.StreamEnded()
	}
	switch {
	case uerr == nil && res != nil && (res.countsSoFar || res.promptTokens == 0 && res.completionTokens == 0):
		estimateUnreported(res, c) // an answer without (final) usage (no prompt is 0 tokens) is not free
	case uerr != nil && (uerr.canceled || uerr.timeout || uerr.full) && !uerr.between && res == nil && attempts > 0:
		// The caller left, or ai.timeout passed, while the provider had the request (not
		// between two attempts), or its answer did not fit in memory: the provider bills
		// what it received, so the prompt's estimate is charged.
		res = &result{}
		estimateUnreported(res, c)
	}
	return s.finish(ctx, finished{
		id: id, userID: userID, provider: providerName, model: c.model, cfg: cfg, start: start,
		upstream: s.now().Sub(start), attempts: attempts, res: res, err: uerr, hold: hold, idPrefix: c.idPrefix,
	})
}

// ready reports whether a call to providerName may start: the usage recorder has room for its
// record, and the provider has an API key (its configuration is returned).
func (s *Service) ready(providerName string) (ProviderConfig, error) {
	if a, ok := s.rec.(interface{ Admit() error }); ok {
		if err := a.Admit(); err != nil {
			return ProviderConfig{}, err
		}
	}
	cfg := s.cfg[providerName]
	if cfg.APIKey == "" {
		return cfg, apperr.E(apperr.Unavailable, fmt.Sprintf("the %s provider is not configured: set ai.%s.api_key (environment %s)",
			providerName, providerName, "APP_AI_"+strings.ToUpper(providerName)+"_API_KEY"))
	}
	return cfg, nil
}

// reserve holds a call's worst case on userID's budget (nil without a budget); a refusal is
// the budget's error, counted for metrics when it is a spent budget.
func (s *Service) reserve(ctx context.Context, userID string, worstCase func() float64) (Reservation, error) {
	if s.budget == nil {
		return nil, nil
	}
	r, err := s.budget.Reserve(ctx, userID, worstCase())
	if err != nil {
		if apperr.KindOf(err) == apperr.PaymentRequired {
			s.obs.BudgetRejected()
		}
		return nil, err
	}
	return r, nil
}

// finished is a call the provider was asked for, as it ended.
type finished struct {
	id, userID, provider, model string
	cfg                         ProviderConfig
	start                       time.Time
	upstream                    time.Duration // time spent on the provider, retries included
	attempts                    int
	res                         *result        // the answer; on a failure mid-stream, what came until then (may be nil)
	err                         *upstreamError // nil: success
	hold                        Reservation    // the budget's hold (nil: no budget)
	idPrefix                    string         // of the tool call ids made up where the provider gives none
}

// toolCallIDPrefix is the prefix of the ids made up for the tool calls of the call with
// request id id (Gemini names none): "call_", the last 24 hex digits of id (a version 7
// UUID begins with the time, the same for calls in the same millisecond), "_"; the call's
// number follows, so that ids are stable within an answer and unique across answers.
func toolCallIDPrefix(id string) string {
	hex := strings.ReplaceAll(id, "-", "")
	if len(hex) > 24 {
		hex = hex[len(hex)-24:]
	}
	return "call_" + hex + "_"
}

// finish is the one place where a call that reached a provider ends: it is priced, recorded,
// settled against the budget and turned into the answer or the error. (Metrics of finished
// calls belong here: provider, model, status, tokens, cost and upstream duration are all known.)
func (s *Service) finish(ctx context.Context, f finished) (*Completion, error) {
	rec := usage.Record{
		RequestID: f.id, UserID: f.userID, Provider: f.provider, Model: f.model, Attempts: f.attempts,
		LatencyMs: f.upstream.Milliseconds(), CreatedAt: f.start.UTC(),
	}
	var c *Completion
	if f.res != nil {
		if m := reportedModel(f.res.model); m != "" {
			rec.Model = m
		}
		// Priced by the model the provider reports, or, when that one has no price (a preview
		// or a snapshot the table does not list), by the model asked for, which the budget
		// reserved for: a reported name must not make a call free.
		priced := rec.Model
		if _, _, ok := s.prices.Lookup(f.provider, priced); !ok {
			priced = f.model
		}
		cost, prices := s.prices.Cost(f.provider, priced, Tokens{
			Prompt: f.res.promptTokens, Completion: f.res.completionTokens, CacheRead: f.res.cacheReadTokens,
			CacheWrite: f.res.cacheWriteTokens, CacheWrite1h: f.res.cacheWrite1h,
		})
		cost = usage.RoundCost(cost)
		total := f.res.promptTokens + f.res.completionTokens // one rule for every provider
		rec.PromptTokens, rec.CompletionTokens, rec.TotalTokens = f.res.promptTokens, f.res.completionTokens, total
		rec.CachedTokens, rec.CacheWriteTokens, rec.CacheWrite1h = f.res.cacheReadTokens, f.res.cacheWriteTokens, f.res.cacheWrite1h
		rec.Cost, rec.ProviderRequestID, rec.Estimated = cost, f.res.providerRequestID, f.res.estimated
		if prices.Entry != "" {
			rec.Prices = &prices
		}
		for i := range f.res.toolCalls {
			if f.res.toolCalls[i].ID == "" {
				f.res.toolCalls[i].ID = f.idPrefix + strconv.Itoa(i)
			}
		}
		c = &Completion{
			Text: f.res.text, ToolCalls: f.res.toolCalls,
			Usage: Usage{PromptTokens: f.res.promptTokens, CompletionTokens: f.res.completionTokens, TotalTokens: total},
			Model: rec.Model, Provider: f.provider, Cost: cost, RequestID: f.id,
			FinishReason: f.res.finishReason, StopSequence: f.res.stopSequence, Refusal: f.res.refusal,
			CachedTokens: f.res.cacheReadTokens, CacheWriteTokens: f.res.cacheWriteTokens, ReasoningTokens: f.res.reasoningTokens,
		}
	}
	var err error
	if f.err != nil {
		msg := describe(f.err)
		rec.Status, rec.UpstreamStatus, rec.Error = usage.StatusError, f.err.status, msg
		if f.err.canceled {
			rec.Status = usage.StatusCanceled
		}
		err, c = s.toAppErr(f.provider, f.err, msg), nil
	} else {
		rec.Status, rec.UpstreamStatus = usage.StatusSuccess, http.StatusOK
	}
	s.obs.ObserveAI(f.provider, rec.Model, outcome(f.err), rec.PromptTokens, rec.CompletionTokens, rec.Cost, f.upstream)
	if f.hold != nil {
		f.hold.Settle(context.WithoutCancel(ctx), rec.Cost)
	}
	s.record(ctx, rec)
	return c, err
}

// worstCase is the most c can cost: every prompt byte a token at the input price, and every
// allowed completion token at the output price (the dearest tier of each).
func (s *Service) worstCase(provider string, c *call) float64 {
	_, pr, ok := s.prices.Lookup(provider, c.model)
	if !ok {
		return Unpriced
	}
	in, out := pr.Input, pr.Output
	for _, t := range pr.tiers {
		if t.input != nil {
			in = max(in, *t.input)
		}
		if t.output != nil {
			out = max(out, *t.output)
		}
	}
	bytes, images := c.promptSize()
	prompt := bytes + images*imageWorstCase + promptOverhead(c)
	return usage.RoundCost(float64(prompt)*in + float64(cmp.Or(c.maxTokens, openMaxTokens))*out)
}

// The prompt tokens a provider bills beyond the text, bounded for a call's worst case: a few
// a message (its role and separators: OpenAI counts 4, and 3 for the reply's start), and with
// tools the system prompt that explains them (Anthropic's is about 350 tokens) and each tool's
// framing. A prompt of many tiny messages, or of tools, costs more than its bytes.
const (
	overheadPerCall    = 16
	overheadPerMessage = 8
	overheadTools      = 512
	overheadPerTool    = 16
)

// promptOverhead is the most prompt tokens c may cost beyond its bytes.
func promptOverhead(c *call) int {
	n := overheadPerCall + overheadPerMessage*len(c.messages)
	if len(c.tools) > 0 {
		n += overheadTools + overheadPerTool*len(c.tools)
	}
	return n
}

// record hands rec to the recorder on a context the caller's departure does not cancel.
func (s *Service) record(ctx context.Context, rec usage.Record) {
	if s.rec == nil {
		return
	}
	if err := s.rec.Record(context.WithoutCancel(ctx), rec); err != nil {
		s.log.Error("ai: usage record not queued", "request_id", rec.RequestID, "err", err)
	}
}

// do calls the provider, retrying what may succeed on a second try, all within ai.timeout.
func (s *Service) do(parent context.Context, ep *endpoint, cfg ProviderConfig, c *call) (*result, int, *upstreamError) {
	ctx, cancel := context.WithTimeout(parent, s.timeout)
	defer cancel()
	var res *result
	deadline, _ := ctx.Deadline()
	attempts, uerr := s.retry(parent, ctx, deadline, ep, c, func() *upstreamError {
		return s.exchange(ctx, ep, cfg, c, maxAnswerBytes, answerTooLarge, func(h http.Header, body []byte) (err error) {
			res, err = ep.provider.parse(c, h, body)
			return err
		})
	})
	if uerr != nil {
		return nil, attempts, uerr
	}
	return res, attempts, nil
}

// retry runs attempt until it succeeds, fails for good, or retries run out; ctx ends at
// deadline (ai.timeout), parent is the caller's.
func (s *Service) retry(parent, ctx context.Context, deadline time.Time, ep *endpoint, c *call, attempt func() *upstreamError) (int, *upstreamError) {
	attempts, retries := 0, 0
	for {
		attempts++
		uerr := attempt()
		if uerr == nil {
			return attempts, nil
		}
		if uerr.timeout || uerr.canceled {
			// Tell the two apart by who ended: the caller (canceled) or our deadline.
			if parent.Err() != nil {
				uerr.timeout, uerr.canceled = false, true
			}
			return attempts, uerr
		}
		if uerr.dropParam == "temperature" && c.sendTemperature {
			// The model only takes its default temperature: remember it and resend at once.
			s.noTemperature.Add(modelKey{ep.spec.name, c.model}, true)
			s.log.Info("ai: model refuses a non-default temperature; it is no longer sent", "provider", ep.spec.name, "model", c.model)
			c.sendTemperature = false
			continue
		}
		if !uerr.retryable || retries >= s.retries {
			return attempts, uerr
		}
		wait := uerr.retryAfter
		if wait <= 0 {
			wait = s.backoff(retries)
		}
		if wait > s.cap {
			return attempts, uerr // the provider asks for longer than we wait: answer now
		}
		if time.Until(deadline) < wait {
			return attempts, uerr
		}
		retries++
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			if parent.Err() != nil {
				return attempts, &upstreamError{canceled: true, between: true, status: uerr.status, message: uerr.message}
			}
			return attempts, &upstreamError{timeout: true, between: true, status: uerr.status}
		}
	}
}

// backoff is base·2^n, capped, minus up to 25% jitter (the official SDKs' rule).
func (s *Service) backoff(n int) time.Duration {
	d := time.Duration(float64(s.base) * math.Pow(2, float64(n)))
	if d > s.cap {
		d = s.cap
	}
	return d - time.Duration(rand.Float64()*0.25*float64(d))
}

// maxAnswerBytes bounds what is read from a provider's answer (and its error answers).
const maxAnswerBytes = 16 << 20

// answerTooLarge says what an answer past maxAnswerBytes was.
var answerTooLarge = fmt.Sprintf("an answer larger than %d MiB", maxAnswerBytes>>20)

// exchange sends c once and hands the provider's 2xx answer to use while its bytes are held
// (readAnswer); an answer past limit bytes is malformed, tooLarge saying what it was ("an
// answer larger than 16 MiB").
func (s *Service) exchange(ctx context.Context, ep *endpoint, cfg ProviderConfig, c *call, limit int64, tooLarge string,
	use func(header http.Header, body []byte) error) *upstreamError {
	resp, u := s.send(ctx, ep.provider, cfg, c)
	if u != nil {
		return u
	}
	defer resp.Body.Close()
	body, held, u := s.readAnswer(ctx, resp, limit+1)
	defer held.Close()
	if u != nil {
		return u
	}
	if int64(len(body)) > limit {
		return malformed(ep.spec.name + " sent " + tooLarge)
	}
	if err := use(resp.Header, body); err != nil {
		return asUpstream(err)
	}
	return nil
}

// readAnswer reads at most limit bytes of resp's body, taking them from the process's bound
// on buffered bytes (server.max_buffered_bytes); closing held gives them back once the
// answer is parsed (on a failure nothing stays held). An answer that does not fit is a
// failure of its own (full), not the provider's.
func (s *Service) readAnswer(ctx context.Context, resp *http.Response, limit int64) (body []byte, held *memlimit.Reader, u *upstreamError) {
	held = memlimit.NewReader(s.mem, io.LimitReader(resp.Body, limit))
	body, err := io.ReadAll(held)
	if err != nil {
		_ = held.Close()
		if errors.Is(err, memlimit.ErrFull) {
			return nil, held, &upstreamError{full: true, status: resp.StatusCode, message: "the server's bound on buffered bytes was reached"}
		}
		u := transportError(ctx, err)
		u.status = resp.StatusCode
		return nil, held, u
	}
	return body, held, nil
}

// maxParamBytes bounds the parameter name a provider's refusal may pass on to the client.
const maxParamBytes = 256

// maxCodeBytes bounds the code a provider's refusal may pass on to the client: OpenAI's are
// short identifiers (context_length_exceeded).
const maxCodeBytes = 64

// maxErrorBytes bounds what is read of a failure's body.
const maxErrorBytes = 64 << 10

// send posts c and returns a 2xx answer with its body open, or the classified failure (the
// provider's message redacted of the API key).
func (s *Service) send(ctx context.Context, p provider, cfg ProviderConfig, c *call) (*http.Response, *upstreamError) {
	req, err := newRequest(ctx, p, cfg.BaseURL, cfg.APIKey, c)
	if err != nil { // nothing was sent: a bug, or a base_url net/http refuses
		return nil, &upstreamError{unbuilt: true, cause: err, message: "could not " + s.redact(withoutURL(err))}
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, transportError(ctx, err)
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return resp, nil
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxErrorBytes))
	if err != nil && ctx.Err() != nil {
		u := transportError(ctx, err)
		u.status = resp.StatusCode
		return nil, u
	}
	u := p.failure(resp.StatusCode, resp.Header, body)
	u.message = s.redact(u.message)
	s.boundNames(u)
	return nil, u
}

// boundNames drops the parameter and the code u names when they cannot be shown to the client
// as they came: a parameter past maxParamBytes, a code past maxCodeBytes or of other characters
// than an identifier's; both redacted of the API keys (a code that held one is dropped).
func (s *Service) boundNames(u *upstreamError) {
	if u.param = s.redact(u.param); len(u.param) > maxParamBytes {
		u.param = "" // no parameter is named so long: not shown
	}
	if len(u.code) > maxCodeBytes || !isIdentifier(u.code) || s.redact(u.code) != u.code {
		u.code = ""
	}
}

// isIdentifier reports whether code is made of ASCII letters, digits, '_', '.' and '-' only
// (every code OpenAI documents is), so that it can be shown as it came.
func isIdentifier(code string) bool {
	for i := 0; i < len(code); i++ {
		c := code[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '.' || c == '-') {
			return false
		}
	}
	return true
}

// serverWords are the words of a provider's code that say the failure is about the server's
// key, account, organization, project or its limits (invalid_api_key, insufficient_quota,
// organization_verification_required, project_model_access_denied, rate_limit_exceeded): such
// a code is never shown as the caller's.
var serverWords = []string{"key", "auth", "quota", "billing", "spend", "credit", "account", "organization", "org_",
	"project", "region", "country", "territory", "deactivated", "permission", "access", "limit", "verif"}

// callerCode reports whether a provider's code for a refusal describes the caller's request
// (context_length_exceeded, invalid_value, model_not_found) and may be passed on as it came.
func callerCode(code string) bool {
	lower := strings.ToLower(code)
	for _, w := range serverWords {
		if strings.Contains(lower, w) {
			return false
		}
	}
	return code != ""
}

// asUpstream returns err as an *upstreamError (a decoder's errors are; anything else is a
// malformed answer).
func asUpstream(err error) *upstreamError {
	var u *upstreamError
	if errors.As(err, &u) {
		return u
	}
	return malformed(err.Error())
}

// transportError classifies a failure to get an answer: our deadline, the caller leaving, or
// a network failure (retried).
func transportError(ctx context.Context, err error) *upstreamError {
	switch {
	case errors.Is(context.Cause(ctx), errIdle):
		return &upstreamError{timeout: true, idle: true}
	case ctx.Err() != nil && errors.Is(context.Cause(ctx), context.DeadlineExceeded), errors.Is(context.Cause(ctx), errFirstPiece):
		return &upstreamError{timeout: true}
	case ctx.Err() != nil:
		return &upstreamError{canceled: true}
	}
	return &upstreamError{retryable: true, cause: err, message: "connection failed: " + netReason(err)}
}

// withoutURL is err's text with the text of a *url.Error's URL (a base_url could carry
// secrets) left out.
func withoutURL(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		return strings.Replace(err.Error(), ue.Error(), ue.Op+": "+ue.Err.Error(), 1)
	}
	return err.Error()
}

// netReason is a transport failure as an operator needs it, without the URL (a base_url
// could carry secrets): a certificate the server does not trust (the first thing met behind
// a proxy that inspects TLS), another TLS failure, a failed DNS lookup, a refused or reset
// connection, a timeout, and whether it is the proxy (HTTPS_PROXY, HTTP_PROXY) that failed.
func netReason(err error) string {
	reason := transportReason(err)
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "proxyconnect" {
		return "the proxy (HTTPS_PROXY or HTTP_PROXY): " + reason
	}
	return reason
}

func transportReason(err error) string {
	var (
		unknownCA   x509.UnknownAuthorityError
		hostname    x509.HostnameError
		invalidCert x509.CertificateInvalidError
		record      tls.RecordHeaderError
		dns         *net.DNSError
		ne          net.Error
		op          *net.OpError
	)
	switch {
	case errors.As(err, &unknownCA):
		issuer := ""
		if unknownCA.Cert != nil && unknownCA.Cert.Issuer.String() != "" {
			issuer = " (" + unknownCA.Cert.Issuer.String() + ")"
		}
		return "TLS certificate signed by an unknown authority" + issuer + ": a proxy that inspects TLS needs its CA " +
			"certificate in the system's trust store or in SSL_CERT_FILE"
	case errors.As(err, &hostname):
		return "TLS certificate not valid for the host: " + strings.TrimPrefix(hostname.Error(), "x509: ")
	case errors.As(err, &invalidCert):
		return "TLS certificate invalid: " + strings.TrimPrefix(invalidCert.Error(), "x509: ")
	case errors.Is(err, http.ErrSchemeMismatch), errors.As(err, &record):
		return "TLS handshake failed: the server does not speak TLS (an https:// base_url for a plain-HTTP server?)"
	case errors.As(err, &dns):
		switch {
		case dns.IsNotFound:
			return "DNS lookup of " + dns.Name + " failed: no such host"
		case dns.IsTimeout:
			return "DNS lookup of " + dns.Name + " timed out"
		}
		return "DNS lookup of " + dns.Name + " failed: " + dns.Err
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.ECONNRESET):
		return "connection reset"
	case errors.As(err, &ne) && ne.Timeout():
		switch {
		case strings.Contains(err.Error(), "TLS handshake timeout"): // net/http's own, an unexported type
			return "TLS handshake timeout"
		case errors.As(err, &op) && (op.Op == "dial" || op.Op == "proxyconnect"):
			return "connect timeout"
		}
		return "timeout"
	case strings.Contains(err.Error(), "tls: "): // an alert ("remote error: tls: handshake failure") and the like
		var ue *url.Error
		if errors.As(err, &ue) {
			return "TLS handshake failed: " + ue.Err.Error()
		}
		return "TLS handshake failed: " + err.Error()
	case errors.As(err, &op):
		if op.Err != nil {
			return op.Op + ": " + op.Err.Error()
		}
		return op.Op
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "connection closed by the provider"
	}
	return "network error"
}

// toAppErr maps a classified failure to the answer the client gets; msg is describe's text
// of it.
func (s *Service) toAppErr(name string, u *upstreamError, msg string) error {
	err := s.appErrOf(name, u, msg)
	if e, ok := err.(*apperr.Error); ok {
		e.UpstreamType = u.errType // the provider's own word, for a surface speaking its dialect
		if e.Kind == apperr.Invalid && u.param != "" {
			e.Param = u.param // the provider's refusal names the parameter as OpenAI's request does
		}
		if e.Kind == apperr.Invalid && callerCode(u.code) {
			e.Code = u.code // the provider's refusal of the caller's request says why, as OpenAI's API does
		}
	}
	return err
}

// appErrOf is toAppErr without what the provider named: its error type, parameter and code.
func (s *Service) appErrOf(name string, u *upstreamError, msg string) error {
	switch {
	case u.canceled:
		return apperr.Wrap(apperr.Unavailable, u, "the request was canceled")
	case u.unbuilt:
		return apperr.Wrap(apperr.Internal, u, name+": "+msg)
	case u.full:
		return memlimit.Refusal(u)
	case u.idle:
		return apperr.Wrap(apperr.UpstreamTimeout, u, fmt.Sprintf("%s sent nothing for %s (ai.stream_idle_timeout)", name, s.idle))
	case u.tooLong:
		return apperr.Wrap(apperr.UpstreamTimeout, u, fmt.Sprintf("%s was still streaming after %s (ai.stream_max_duration)", name, s.maxDur))
	case u.timeout:
		return apperr.Wrap(apperr.UpstreamTimeout, u, fmt.Sprintf("%s did not answer within %s (ai.timeout)", name, s.timeout))
	case u.authRejected:
		e := apperr.Wrap(apperr.Upstream, u, fmt.Sprintf("%s refused the server's API key: check ai.%s.api_key", name, name))
		e.NoRetry = true // until an operator changes the key
		return e
	case u.billing:
		e := apperr.Wrap(apperr.Unavailable, u, fmt.Sprintf("%s refused the request: the server's account has reached its spending limit (%s)", name, msg))
		e.NoRetry = true // until an operator adds credit
		return e
	case u.blocked != "":
		return apperr.Wrap(apperr.Invalid, u, fmt.Sprintf("%s blocked the prompt: %s", name, u.blocked))
	case u.malformed:
		return apperr.Wrap(apperr.Upstream, u, msg)
	case u.midStream:
		return apperr.Wrap(apperr.Upstream, u, fmt.Sprintf("%s failed mid-stream: %s", name, msg))
	case u.status == http.StatusTooManyRequests:
		e := apperr.Wrap(apperr.RateLimited, u, fmt.Sprintf("%s rate limit reached: %s", name, msg))
		if u.retryAfter > 0 {
			e.RetryAfter = int(math.Ceil(u.retryAfter.Seconds()))
		} else {
			e.RetryAfter = 1
		}
		return e
	case u.status == http.StatusBadRequest || u.status == http.StatusNotFound || u.status == http.StatusUnprocessableEntity ||
		u.status == http.StatusRequestEntityTooLarge:
		return apperr.Wrap(apperr.Invalid, u, fmt.Sprintf("%s rejected the request: %s", name, msg))
	case u.status == 0:
		return apperr.Wrap(apperr.Upstream, u, fmt.Sprintf("%s could not be reached: %s", name, msg))
	default:
		return apperr.Wrap(apperr.Upstream, u, fmt.Sprintf("%s failed (status %d): %s", name, u.status, msg))
	}
}

// describe is a failure's text for answers, records and logs (its message is already redacted).
func describe(u *upstreamError) string {
	msg := u.message
	switch {
	case u.timeout:
		msg = "timeout"
	case u.canceled:
		msg = "canceled by the caller"
	case u.blocked != "":
		msg = "blocked: " + u.blocked
	case msg == "":
		msg = "no error message"
	}
	if len(msg) > 500 {
		msg = strings.ToValidUTF8(msg[:500], "") + "…"
	}
	return msg
}

// outcome is a finished call's status as metrics count it: "200" for a success, the provider's
// HTTP status for a failure it answered, else "timeout", "canceled" or "error".
func outcome(u *upstreamError) string {
	switch {
	case u == nil:
		return "200"
	case u.canceled:
		return "canceled"
	case u.timeout:
		return "timeout"
	case u.full:
		return "overloaded"
	case u.status >= 100 && u.status <= 599 && u.status != http.StatusOK:
		return strconv.Itoa(u.status)
	}
	return "error"
}

// keyPrefix is how much of a key's start identifies it: a text holding that much of a key
// (the key cut short, or followed by other characters) holds a part of the secret.
const keyPrefix = 20

// keysPattern matches every configured API key in any letter case, each of its characters
// also percent-encoded (a provider may quote the key from a URL: sk%2Dlive…): its first
// keyPrefix characters and the token characters after them, so that a key quoted cut short
// is hidden too. The longest first; nil when none is set.
func keysPattern(providers map[string]ProviderConfig) *regexp.Regexp {
	var keys []string
	for _, p := range providers {
		if p.APIKey == "" {
			continue
		}
		var b strings.Builder
		for i, c := range []rune(p.APIKey) {
			if i == keyPrefix {
				break
			}
			b.WriteString("(?:" + regexp.QuoteMeta(string(c)))
			for _, x := range []byte(string(c)) {
				fmt.Fprintf(&b, "|%%%02X", x)
			}
			b.WriteString(")")
		}
		keys = append(keys, b.String()+`(?:[A-Za-z0-9_\-]|%[0-9A-Fa-f]{2})*`)
	}
	if len(keys) == 0 {
		return nil
	}
	slices.SortFunc(keys, func(a, b string) int { return len(b) - len(a) })
	return regexp.MustCompile("(?i)" + strings.Join(keys, "|"))
}

// redact removes the API keys from a provider's text before it is logged, answered or
// stored: some providers quote a key back ("Incorrect API key provided: sk-…"), and one
// gateway behind several base URLs may quote another provider's key than the one it got.
func (s *Service) redact(msg string) string {
	if s.keys == nil || msg == "" {
		return msg
	}
	return s.keys.ReplaceAllLiteralString(msg, "[redacted]")
}
