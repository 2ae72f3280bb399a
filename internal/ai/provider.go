package ai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/acme/app/internal/apperr"
)

// provider speaks one vendor's wire format. Adding a provider is one file that implements it,
// one line in providerList and its entry in package providers (its name and defaults).
type provider interface {
	// spec returns the endpoint's rules and defaults; it is called once, at package init.
	spec() spec
	// path is the request path for c below the configured base URL, escaped, with its query.
	path(c *call) string
	// headers are the authentication (and version) headers for apiKey, as name, value pairs.
	headers(apiKey string) []string
	// check refuses, before anything is sent, what the provider cannot take of c (an image
	// URL Gemini cannot fetch, tool arguments that are not an object): an Invalid
	// *apperr.Error naming the parameter, or nil.
	check(c *call) error
	// body is the typed JSON request body for c.
	body(c *call) any
	// parse reads a 2xx answer to c. An error is an *upstreamError.
	parse(c *call, header http.Header, body []byte) (*result, error)
	// failure classifies a non-2xx answer.
	failure(status int, header http.Header, body []byte) *upstreamError
	// newStream returns the reader of one streamed answer's events to c.
	newStream(c *call, header http.Header) streamDecoder
}

// streamDecoder reads one streamed answer, event by event.
type streamDecoder interface {
	// event reads one server-sent event: it appends to out the pieces of text and tool calls
	// it adds (maybe none), and reports whether it ends the stream. An error is an *upstreamError (a failure the provider reported mid-stream,
	// or an event that cannot be read).
	event(name string, data []byte, out []Delta) (deltas []Delta, end bool, err error)
	// result is the answer so far: the usage reported until now, the model, the finish reason.
	result() *result
	// endsAtEOF reports whether the end of the body is a normal end of the stream (Gemini's
	// stream has no closing event).
	endsAtEOF() bool
}

// providerList is every provider, in the order Providers names them.
var providerList = []provider{openAI{}, anthropic{}, gemini{}}

// endpoint is a provider with its spec, computed once.
type endpoint struct {
	provider provider
	spec     spec
}

// providers is every provider by its path segment (spec.name); providerNames is their names
// in providerList's order.
var providers, providerNames = indexProviders(providerList)

func indexProviders(list []provider) (map[string]*endpoint, []string) {
	byName := make(map[string]*endpoint, len(list))
	names := make([]string, len(list))
	for i, p := range list {
		sp := p.spec()
		byName[sp.name] = &endpoint{provider: p, spec: sp}
		names[i] = sp.name
	}
	return byName, names
}

// spec is what the service needs to know about an endpoint.
type spec struct {
	name               string   // path segment and config name: ai.<name>.*
	roles              []string // accepted message roles
	maxTemperature     float64
	defaultTemperature float64
}

// modelKey names a provider's model; as a map key it costs no allocation to look up.
type modelKey struct{ provider, model string }

// call is one normalized request to a provider.
type call struct {
	model           string
	messages        []Message
	temperature     float64
	sendTemperature bool // false once the model refused a non-default temperature
	maxTokens       int
	topP            *float64
	stop            []string
	stream          bool
	tools           []Tool
	toolChoice      ToolChoice
	parallel        *bool // parallel tool calls (nil: the provider's default)
	format          *ResponseFormat
	idPrefix        string // of the tool call ids made up where the provider gives none
}

// promptSize returns the bytes of c's prompt text (messages and tool definitions) and how many
// images it holds.
func (c *call) promptSize() (bytes, images int) {
	for i := range c.messages {
		b, n := c.messages[i].textSize()
		bytes, images = bytes+b, images+n
	}
	for _, t := range c.tools {
		bytes += len(t.Name) + len(t.Description) + len(t.Parameters)
	}
	return bytes, images
}

// temperatureParam is the temperature to send, or nil when the model refused one.
func (c *call) temperatureParam() *float64 {
	if !c.sendTemperature {
		return nil
	}
	t := c.temperature
	return &t
}

// result is a provider's answer, normalized.
type result struct {
	text              string
	toolCalls         []ToolCall
	model             string // as the provider reports it ("" = the requested one)
	promptTokens      int64  // every prompt token, cached ones included
	completionTokens  int64  // every completion token, reasoning/thinking included
	cacheReadTokens   int64  // prompt tokens read from cache (billed at the cache rate)
	cacheWriteTokens  int64  // prompt tokens written to cache (Anthropic)
	cacheWrite1h      int64  // the part of cacheWriteTokens kept an hour (Anthropic)
	reasoningTokens   int64  // completion tokens spent on reasoning/thinking
	finishReason      string // OpenAI's words: stop, length, content_filter, tool_calls
	stopSequence      string // the stop sequence met, when the provider names it (Anthropic)
	refusal           string // the model's refusal to answer, in place of text (OpenAI)
	providerRequestID string
	estimated         bool // a count was estimated from the text (see estimateUnreported)
	countsSoFar       bool // the provider's counts are counts so far: its final usage never came
}

// maxTokensPerCall bounds every token count a provider reports for one call: a larger or a
// negative one is a malformed answer, never recorded.
const maxTokensPerCall = 1_000_000_000

// checkCounts refuses counts no call can have; name is the provider's, for the message.
func checkCounts(name string, counts ...int64) error {
	for _, n := range counts {
		if n < 0 || n > maxTokensPerCall {
			return malformed(fmt.Sprintf("%s reported an impossible token count (%d)", name, n))
		}
	}
	return nil
}

// checkTotals refuses counts that cannot go together once added up: a prompt or a completion
// past maxTokensPerCall (its parts each within it), cached tokens beyond the prompt, reasoning
// tokens beyond the completion. Such an answer would be priced and charged but its usage
// record refused, so the answer, the budget and the usage log would disagree.
func (r *result) checkTotals(name string) error {
	switch {
	case r.promptTokens > maxTokensPerCall || r.completionTokens > maxTokensPerCall:
		return malformed(fmt.Sprintf("%s reported an impossible token count (%d prompt, %d completion)", name, r.promptTokens, r.completionTokens))
	case r.cacheReadTokens+r.cacheWriteTokens > r.promptTokens:
		return malformed(fmt.Sprintf("%s reported more cached tokens (%d) than prompt tokens (%d)", name, r.cacheReadTokens+r.cacheWriteTokens, r.promptTokens))
	case r.reasoningTokens > r.completionTokens:
		return malformed(fmt.Sprintf("%s reported more reasoning tokens (%d) than completion tokens (%d)", name, r.reasoningTokens, r.completionTokens))
	}
	return nil
}

// maxModelName bounds the model name a provider reports.
const maxModelName = 128

// reportedModel returns the model a provider named in its answer when it is a plain short
// name (printable, no '$', not only dots), else "" (the requested model is kept).
func reportedModel(s string) string {
	if s == "" || len(s) > maxModelName || !utf8.ValidString(s) || strings.ContainsRune(s, '$') ||
		strings.Trim(s, ".") == "" {
		return ""
	}
	for _, r := range s {
		if !unicode.IsPrint(r) || unicode.IsSpace(r) {
			return ""
		}
	}
	return s
}

// upstreamError is a provider failure, classified.
type upstreamError struct {
	status       int    // upstream HTTP status (0: no answer)
	message      string // the provider's message, redacted (may be shown for 4xx)
	retryable    bool
	retryAfter   time.Duration // the provider's hint (0: none)
	billing      bool          // the account is out of money: do not retry
	authRejected bool          // the server's key was refused
	blocked      string        // the prompt was blocked (reason)
	malformed    bool          // a 2xx answer that could not be read
	dropParam    string        // a parameter the model refuses: retry once without it
	timeout      bool          // ai.timeout (or ai.stream_idle_timeout) passed
	idle         bool          // the timeout was ai.stream_idle_timeout, between two events
	tooLong      bool          // the stream ran past ai.stream_max_duration
	canceled     bool          // the caller went away
	full         bool          // the answer did not fit in the process's bound on buffered bytes
	between      bool          // … while waiting between two attempts (the provider had no request)
	midStream    bool          // the failure came after the stream had started
	errType      string        // the error type the provider reported: in its stream (OpenAI's, Anthropic's, Gemini's status) or its error answer (Anthropic's, Gemini's status)
	param        string        // the request parameter the provider named (OpenAI's param), in its notation
	code         string        // the provider's machine-readable reason (OpenAI's code), as it sent it
	unbuilt      bool          // the request could not be built: nothing was sent
	cause        error         // the transport's or request builder's error, if any
}

// statusOfEvent is the HTTP status a provider answers with for the error type it reports as
// an event of its stream instead: a stream that fails before its first piece is classified as
// that answer would be (a request refused is the client's to fix, not a server error).
func statusOfEvent(errType string) int {
	switch errType {
	case "invalid_request_error":
		return http.StatusBadRequest
	case "authentication_error":
		return http.StatusUnauthorized
	case "permission_error":
		return http.StatusForbidden
	case "not_found_error":
		return http.StatusNotFound
	case "request_too_large":
		return http.StatusRequestEntityTooLarge
	case "rate_limit_error", "rate_limit_exceeded", "insufficient_quota", "RESOURCE_EXHAUSTED":
		return http.StatusTooManyRequests
	case "overloaded_error":
		return 529 // Anthropic's status for it
	case "UNAVAILABLE":
		return http.StatusServiceUnavailable // Gemini's status for it (overloaded)
	}
	return http.StatusInternalServerError
}

func (e *upstreamError) Error() string {
	if e.message != "" {
		return e.message
	}
	return "upstream status " + strconv.Itoa(e.status)
}

// Unwrap returns the transport's or request builder's error (errors.Is and As see it; its text,
// which may hold the URL, is never shown).
func (e *upstreamError) Unwrap() error { return e.cause }

// decodeAnswer decodes a provider's JSON answer (or stream event) into v with encoding/json,
// naming the field of a value of the wrong type.
func decodeAnswer(name string, data []byte, v any) error {
	err := json.Unmarshal(data, v)
	if err == nil {
		return nil
	}
	var typ *json.UnmarshalTypeError
	if errors.As(err, &typ) {
		if typ.Field == "" {
			return malformed(fmt.Sprintf("%s sent an answer that is not a JSON object", name))
		}
		return malformed(fmt.Sprintf("%s sent an answer with an unreadable %s", name, typ.Field))
	}
	return malformed(name + " sent an answer that is not valid JSON")
}

// newRequest returns the POST of c to the provider at base, authenticated with apiKey.
func newRequest(ctx context.Context, p provider, base, apiKey string, c *call) (*http.Request, error) {
	body, err := json.Marshal(p.body(c))
	if err != nil {
		return nil, fmt.Errorf("encode the request: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+p.path(c), bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("build the request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	if c.stream {
		req.Header.Set("Accept", "text/event-stream")
	} else {
		req.Header.Set("Accept", "application/json")
	}
	kv := p.headers(apiKey)
	for i := 0; i+1 < len(kv); i += 2 {
		req.Header.Set(kv[i], kv[i+1])
	}
	return req, nil
}

// defaultRetryable is the SDKs' rule: 408, 409, 429 and 5xx are retried; x-should-retry wins.
func defaultRetryable(status int, header http.Header) bool {
	switch strings.ToLower(header.Get("x-should-retry")) {
	case "true":
		return true
	case "false":
		return false
	}
	return status == 408 || status == 409 || status == 429 || status >= 500
}

// retryAfter reads retry-after-ms, then retry-after (seconds or an HTTP date).
func retryAfter(header http.Header, now time.Time) time.Duration {
	if ms, err := strconv.ParseFloat(header.Get("retry-after-ms"), 64); err == nil && ms > 0 {
		return capRetryAfter(ms * float64(time.Millisecond))
	}
	v := strings.TrimSpace(header.Get("retry-after"))
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil && s > 0 {
		return capRetryAfter(s * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 { // Sub saturates: a date far ahead is the largest Duration
			return min(d, maxRetryAfter)
		}
	}
	return 0
}

// maxRetryAfter bounds a provider's retry hint: a larger one (or one past a Duration's range)
// is a day.
const maxRetryAfter = 24 * time.Hour

// capRetryAfter converts ns nanoseconds (positive, possibly +Inf) to at most maxRetryAfter.
func capRetryAfter(ns float64) time.Duration {
	if ns >= float64(maxRetryAfter) {
		return maxRetryAfter
	}
	return time.Duration(ns)
}

// refuse is the Invalid error of a parameter a provider cannot take (param in the
// service's notation: messages.0.content.1.image_url), sent to no provider.
func refuse(param, msg string) error {
	return &apperr.Error{Kind: apperr.Invalid, Messages: []string{msg}, Param: param}
}

func malformed(what string) *upstreamError {
	return &upstreamError{status: http.StatusOK, malformed: true, message: what}
}

// needConversation refuses a call of system messages alone to a provider that takes them as
// its system prompt (Anthropic, Gemini): it would be sent no message at all, which both
// providers refuse.
func needConversation(c *call, provider string) error {
	for i := range c.messages {
		if c.messages[i].Role != "system" {
			return nil
		}
	}
	return refuse("messages", "messages must hold a user or assistant message beside the system messages on "+provider+" models")
}
