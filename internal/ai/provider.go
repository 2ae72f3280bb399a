package ai

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	jsonv2 "github.com/go-json-experiment/json"

	"github.com/acme/app/internal/usage"
)

// provider speaks one vendor's wire format. Adding a provider is one file that implements it
// and one line in providerList.
type provider interface {
	// spec returns the endpoint's rules and defaults; it is called once, at package init.
	spec() spec
	// newRequest builds the upstream HTTP request for c.
	newRequest(ctx context.Context, baseURL, apiKey string, c *call) (*http.Request, error)
	// parse reads a 2xx answer. An error is an *upstreamError.
	parse(header http.Header, body []byte) (*result, error)
	// failure classifies a non-2xx answer.
	failure(status int, header http.Header, body []byte) *upstreamError
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

// call is one normalized request to a provider.
type call struct {
	model           string
	messages        []Message
	temperature     float64
	sendTemperature bool // false once the model refused a non-default temperature
	maxTokens       int
}

// temperatureField is the request body's temperature: nil (left out) once the model refused a
// non-default one.
func (c *call) temperatureField() *float64 {
	if !c.sendTemperature {
		return nil
	}
	t := c.temperature
	return &t
}

// result is a provider's answer, normalized.
type result struct {
	text              string
	model             string        // as the provider reports it ("" = the requested one)
	promptTokens      int64         // every prompt token, cached ones included
	completionTokens  int64         // every completion token, reasoning/thinking included
	cacheReadTokens   int64         // prompt tokens read from cache (billed at the cache rate)
	cacheWriteTokens  int64         // prompt tokens written to cache (Anthropic)
	rawUsage          usage.RawJSON // the provider's usage object, as received
	providerRequestID string
}

// upstreamError is a provider failure, classified.
type upstreamError struct {
	status       int    // upstream HTTP status (0: no answer)
	message      string // the provider's message (may be shown for 4xx)
	retryable    bool
	retryAfter   time.Duration // the provider's hint (0: none)
	billing      bool          // the account is out of money: do not retry
	authRejected bool          // the server's key was refused
	blocked      string        // the prompt was blocked (reason)
	malformed    bool          // a 2xx answer that could not be read
	dropParam    string        // a parameter the model refuses: retry once without it
	timeout      bool          // ai.timeout passed
	canceled     bool          // the caller went away
}

func (e *upstreamError) Error() string {
	if e.message != "" {
		return e.message
	}
	return "upstream status " + strconv.Itoa(e.status)
}

// decodeAnswer decodes a provider's JSON answer into v: the JSON v2 decoder first (several
// times faster, fewer allocations), then encoding/json, which also takes what v2 refuses
// (duplicate names, invalid UTF-8), so that no answer is lost to the faster path. Names match
// exactly, as the providers' wire formats spell them.
func decodeAnswer[T any](data []byte, v *T) error {
	if jsonv2.Unmarshal(data, v) == nil {
		return nil
	}
	var zero T
	*v = zero
	return json.Unmarshal(data, v)
}

// decodeUsage reads a provider's usage object into v; an absent one is zero usage, an
// unreadable one a malformed answer described by unreadable.
func decodeUsage[T any](raw json.RawMessage, v *T, unreadable string) error {
	if len(raw) == 0 {
		return nil
	}
	if err := decodeAnswer(raw, v); err != nil {
		return malformed(unreadable)
	}
	return nil
}

// jsonRequest returns a POST of body (JSON) to url, with the headers given as canonical
// name, value pairs besides Content-Type and Accept.
func jsonRequest(ctx context.Context, url string, body any, headers ...string) (*http.Request, error) {
	buf, err := jsonv2.Marshal(body)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(buf))
	if err != nil {
		return nil, err
	}
	h := make(http.Header, 2+len(headers)/2)
	h["Content-Type"], h["Accept"] = jsonMediaType, jsonMediaType
	for i := 0; i+1 < len(headers); i += 2 {
		h[headers[i]] = []string{headers[i+1]}
	}
	req.Header = h
	return req, nil
}

// jsonMediaType is shared by every request: the transport only reads headers.
var jsonMediaType = []string{"application/json"}

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
		return time.Duration(ms * float64(time.Millisecond))
	}
	v := strings.TrimSpace(header.Get("retry-after"))
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil && s > 0 {
		return time.Duration(s * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return d
		}
	}
	return 0
}

func malformed(what string) *upstreamError {
	return &upstreamError{status: http.StatusOK, malformed: true, message: what}
}
