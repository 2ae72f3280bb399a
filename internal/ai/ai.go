// Package ai proxies chat completions to OpenAI, Anthropic and Gemini on their own wire APIs,
// normalizes the answers, prices them and hands each request to the usage recorder.
package ai

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/acme/app/internal/apperr"
	"github.com/acme/app/internal/h1"
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

// Options configure the service.
type Options struct {
	Providers map[string]ProviderConfig // by name: openai, anthropic, gemini
	Timeout   time.Duration             // ai.timeout: the whole call, retries included
	Prices    *Prices                   // nil: the embedded table
	Recorder  Recorder                  // nil: nothing is recorded
	Logger    *slog.Logger
	Transport http.RoundTripper // nil: a shared keep-alive transport (NewTransport)

	MaxRetries    int           // retries after the first attempt (default 2; negative: none)
	RetryBase     time.Duration // first backoff (default 500ms), doubled per retry
	RetryCap      time.Duration // longest wait between attempts, Retry-After included (default 8s)
	DefaultMaxTok int           // maxTokens when absent (default 1000)
	Now           func() time.Time
}

// Service completes chats.
type Service struct {
	cfg     map[string]ProviderConfig
	targets map[string]*target // by provider name, for every configured provider
	timeout time.Duration
	prices  *Prices
	rec     Recorder
	log     *slog.Logger
	rt      http.RoundTripper
	retries int
	base    time.Duration
	cap     time.Duration
	maxTok  int
	now     func() time.Time

	noTemperature syncMap[modelKey, bool] // models that refuse a non-default temperature
}

// NewTransport returns the HTTP transport shared by every provider call: h1's lean HTTP/1.1
// transport over keep-alive connections, with bounded dials and TLS handshakes; the per-call
// deadline comes from the context. A call an HTTP proxy must carry (HTTPS_PROXY and the like)
// goes through net/http's Transport instead.
//
// Calls go to the transport directly, not through an http.Client: a provider's redirect is
// answered as a failure and never followed, so a request carrying the API key (in headers an
// http.Client would keep on a redirect to another host) is never re-sent elsewhere, and the
// client's per-request header copy is saved.
//
// Answers are asked for uncompressed: they are a few kilobytes of JSON, and transparent gzip
// costs a header per request, and inflating on our side.
func NewTransport() http.RoundTripper {
	dialer := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	return &h1.Transport{
		DialContext:         dialer.DialContext,
		TLSHandshakeTimeout: 10 * time.Second,
		MaxIdleConnsPerHost: 256,
		IdleConnTimeout:     90 * time.Second,
		Proxy:               http.ProxyFromEnvironment,
		Fallback: &http.Transport{
			Proxy:               http.ProxyFromEnvironment,
			DialContext:         dialer.DialContext,
			ForceAttemptHTTP2:   true,
			MaxIdleConns:        512,
			MaxIdleConnsPerHost: 256,
			IdleConnTimeout:     90 * time.Second,
			TLSHandshakeTimeout: 10 * time.Second,
			DisableCompression:  true,
		},
	}
}

// New returns the service.
func New(opts Options) *Service {
	s := &Service{
		cfg: opts.Providers, timeout: opts.Timeout, prices: opts.Prices, rec: opts.Recorder, log: opts.Logger,
		rt: opts.Transport, retries: opts.MaxRetries, base: opts.RetryBase, cap: opts.RetryCap,
		maxTok: opts.DefaultMaxTok, now: opts.Now,
	}
	s.targets = make(map[string]*target, len(opts.Providers))
	for name, cfg := range opts.Providers {
		if ep, ok := providers[name]; ok {
			s.targets[name] = newTarget(ep.provider, cfg)
		}
	}
	if s.timeout <= 0 {
		s.timeout = 60 * time.Second
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.prices == nil {
		s.prices, _ = LoadPrices("", s.log)
	}
	if s.rt == nil {
		s.rt = NewTransport()
	}
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

// Complete sends in to the named provider on behalf of userID and returns the normalized answer.
// Every call that reaches a provider is recorded, success or failure, even if ctx is canceled.
//
// Returns NotFound for an unknown provider; Invalid (an array of messages) when in breaks the
// endpoint's rules; Unavailable when the provider has no API key, or the server's account is out
// of credit; Invalid with the provider's message when it refuses the request (400/404) or a
// Gemini prompt is blocked; RateLimited (with RetryAfter) when the provider keeps answering 429;
// Upstream when the key is refused, the provider keeps failing or answers nonsense;
// UpstreamTimeout past ai.timeout.
func (s *Service) Complete(ctx context.Context, userID, providerName string, in ChatInput) (*Completion, error) {
	ep, ok := providers[providerName]
	if !ok {
		return nil, apperr.E(apperr.NotFound, "unknown AI provider "+providerName)
	}
	sp := &ep.spec
	if msgs := in.validate(sp); len(msgs) > 0 {
		return nil, apperr.Validation(msgs...)
	}
	if a, ok := s.rec.(interface{ Admit() error }); ok {
		if err := a.Admit(); err != nil {
			return nil, err
		}
	}
	cfg := s.cfg[providerName]
	if cfg.APIKey == "" {
		return nil, apperr.E(apperr.Unavailable, fmt.Sprintf("the %s provider is not configured: set ai.%s.api_key (environment %s)",
			providerName, providerName, "APP_AI_"+strings.ToUpper(providerName)+"_API_KEY"))
	}
	c := &call{model: in.Model, messages: in.Messages, temperature: sp.defaultTemperature, maxTokens: s.maxTok}
	if c.model == "" {
		c.model = cfg.DefaultModel
	}
	if in.Temperature != nil {
		c.temperature = *in.Temperature
	}
	if in.MaxTokens != nil {
		c.maxTokens = *in.MaxTokens
	}
	_, refuses := s.noTemperature.get(modelKey{providerName, c.model})
	c.sendTemperature = !refuses
	id := in.RequestID
	if _, err := uuid.Parse(id); err != nil || len(id) != 36 {
		id = uuid.NewString()
	}

	start := s.now()
	res, attempts, uerr := s.do(ctx, ep, s.targets[providerName], c)
	rec := usage.Record{
		RequestID: id, UserID: userID, Provider: providerName, Model: c.model, Attempts: attempts,
		LatencyMs: s.now().Sub(start).Milliseconds(), CreatedAt: start.UTC(),
	}
	if uerr != nil {
		msg := s.describe(uerr, cfg)
		rec.Status, rec.UpstreamStatus, rec.Error = usage.StatusError, uerr.status, msg
		if uerr.canceled {
			rec.Status = usage.StatusCanceled
		}
		s.record(ctx, rec)
		return nil, s.toAppErr(providerName, uerr, msg)
	}
	if res.model != "" {
		rec.Model = res.model
	}
	cost, prices := s.prices.Cost(providerName, rec.Model, Tokens{
		Prompt: res.promptTokens, Completion: res.completionTokens, CacheRead: res.cacheReadTokens, CacheWrite: res.cacheWriteTokens,
	})
	total := res.promptTokens + res.completionTokens // one rule for every provider
	rec.Status, rec.UpstreamStatus = usage.StatusSuccess, http.StatusOK
	rec.PromptTokens, rec.CompletionTokens, rec.TotalTokens = res.promptTokens, res.completionTokens, total
	rec.CachedTokens, rec.CacheWriteTokens = res.cacheReadTokens, res.cacheWriteTokens
	rec.Cost, rec.ProviderRequestID = cost, res.providerRequestID
	if prices.Entry != "" {
		rec.Prices = &prices
	}
	s.record(ctx, rec)
	return &Completion{
		Text:      res.text,
		Usage:     Usage{PromptTokens: res.promptTokens, CompletionTokens: res.completionTokens, TotalTokens: total},
		Model:     rec.Model,
		Provider:  providerName,
		Cost:      cost,
		RequestID: id,
	}, nil
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
func (s *Service) do(parent context.Context, ep *endpoint, t *target, c *call) (*result, int, *upstreamError) {
	ctx, cancel := context.WithTimeout(parent, s.timeout)
	defer cancel()
	attempts, retries := 0, 0
	for {
		attempts++
		res, uerr := s.attempt(ctx, ep.provider, t, c)
		if uerr == nil {
			return res, attempts, nil
		}
		if uerr.timeout || uerr.canceled {
			// Tell the two apart by who ended: the caller (canceled) or our deadline.
			if parent.Err() != nil {
				uerr.timeout, uerr.canceled = false, true
			}
			return nil, attempts, uerr
		}
		if uerr.dropParam == "temperature" && c.sendTemperature {
			// The model only takes its default temperature: remember it and resend at once.
			s.noTemperature.add(modelKey{ep.spec.name, c.model}, true)
			s.log.Info("ai: model refuses a non-default temperature; it is no longer sent", "provider", ep.spec.name, "model", c.model)
			c.sendTemperature = false
			continue
		}
		if !uerr.retryable || retries >= s.retries {
			return nil, attempts, uerr
		}
		wait := uerr.retryAfter
		if wait <= 0 {
			wait = s.backoff(retries)
		}
		if wait > s.cap {
			return nil, attempts, uerr // the provider asks for longer than we wait: answer now
		}
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < wait {
			return nil, attempts, uerr
		}
		retries++
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			if parent.Err() != nil {
				return nil, attempts, &upstreamError{canceled: true, status: uerr.status, message: uerr.message}
			}
			return nil, attempts, &upstreamError{timeout: true, status: uerr.status}
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

// maxAnswerBytes bounds what is read from a provider.
const maxAnswerBytes = 16 << 20

func (s *Service) attempt(ctx context.Context, p provider, t *target, c *call) (*result, *upstreamError) {
	req, err := t.newRequest(ctx, p, c)
	if err != nil {
		return nil, &upstreamError{message: "could not build the request"}
	}
	resp, err := s.rt.RoundTrip(req)
	if err != nil {
		return nil, transportError(ctx, err)
	}
	body, err := readAnswer(resp)
	resp.Body.Close()
	if err != nil {
		u := transportError(ctx, err)
		u.status = resp.StatusCode
		return nil, u
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		res, err := p.parse(resp.Header, body)
		if err != nil {
			var u *upstreamError
			if errors.As(err, &u) {
				return nil, u
			}
			return nil, malformed(err.Error())
		}
		return res, nil
	}
	return nil, p.failure(resp.StatusCode, resp.Header, body)
}

// readAnswer reads a provider's answer, at most maxAnswerBytes of it, into one buffer of the
// announced length when there is one.
func readAnswer(resp *http.Response) ([]byte, error) {
	if n := resp.ContentLength; n >= 0 && n <= maxAnswerBytes {
		buf := make([]byte, n)
		_, err := io.ReadFull(resp.Body, buf)
		return buf, err
	}
	return io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes))
}

// transportError classifies a failure to get an answer: our deadline, the caller leaving, or
// a network failure (retried).
func transportError(ctx context.Context, err error) *upstreamError {
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return &upstreamError{timeout: true}
	case ctx.Err() != nil:
		return &upstreamError{canceled: true}
	}
	return &upstreamError{retryable: true, message: "connection failed: " + netReason(err)}
}

// netReason is the failure without the URL (which could carry secrets in a base_url).
func netReason(err error) string {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return "timeout"
	}
	var op *net.OpError
	if errors.As(err, &op) {
		if op.Err != nil {
			return op.Op + ": " + op.Err.Error()
		}
		return op.Op
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return "connection closed by the provider"
	}
	return "network error"
}

// toAppErr maps a classified failure to the answer the client gets; msg is describe's text
// of it.
func (s *Service) toAppErr(name string, u *upstreamError, msg string) error {
	switch {
	case u.canceled:
		return apperr.Wrap(apperr.Unavailable, u, "the request was canceled")
	case u.timeout:
		return apperr.Wrap(apperr.UpstreamTimeout, u, fmt.Sprintf("%s did not answer within %s (ai.timeout)", name, s.timeout))
	case u.authRejected:
		return apperr.Wrap(apperr.Upstream, u, fmt.Sprintf("%s refused the server's API key: check ai.%s.api_key", name, name))
	case u.billing:
		return apperr.Wrap(apperr.Unavailable, u, fmt.Sprintf("%s refused the request: the server's account has reached its spending limit (%s)", name, msg))
	case u.blocked != "":
		return apperr.Wrap(apperr.Invalid, u, fmt.Sprintf("%s blocked the prompt: %s", name, u.blocked))
	case u.malformed:
		return apperr.Wrap(apperr.Upstream, u, msg)
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

// describe is a failure's text for answers and logs, with the API key scrubbed from it.
func (s *Service) describe(u *upstreamError, cfg ProviderConfig) string {
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
	if cfg.APIKey != "" {
		msg = strings.ReplaceAll(msg, cfg.APIKey, "[redacted]")
	}
	if len(msg) > 500 {
		msg = msg[:500] + "…"
	}
	return msg
}
