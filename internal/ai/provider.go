package ai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/acme/app/internal/usage"
)

// provider speaks one vendor's wire format. Adding a provider is one file that implements it
// and one line in providerList.
type provider interface {
	// spec returns the endpoint's rules and defaults; it is called once, at package init.
	spec() spec
	// path is the request path for model, below the configured base URL, escaped.
	path(model string) string
	// headers are the authentication (and version) headers for apiKey, as canonical name,
	// value pairs.
	headers(apiKey string) []string
	// appendBody writes the JSON request body for c.
	appendBody(j *jsonBuf, c *call)
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

// modelKey names a provider's model; as a map key it costs no allocation to look up.
type modelKey struct{ provider, model string }

// call is one normalized request to a provider.
type call struct {
	model           string
	messages        []Message
	temperature     float64
	sendTemperature bool // false once the model refused a non-default temperature
	maxTokens       int
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

// answerOptions let the JSON v2 decoder take duplicate names (the last one wins) and invalid
// UTF-8 (replaced by U+FFFD), as encoding/json does.
var answerOptions = jsonv2.JoinOptions(jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))

// decodeAnswer decodes a provider's JSON answer into v: the JSON v2 decoder first (several
// times faster, fewer allocations), then, if it fails, encoding/json, which reads what it can,
// so that a usageObject of the wrong shape is reported as such rather than the whole answer as
// unreadable. Names match exactly, as the providers' wire formats spell them.
func decodeAnswer[T any](data []byte, v *T) error {
	if jsonv2.Unmarshal(data, v, answerOptions) == nil {
		return nil
	}
	var zero T
	*v = zero
	return json.Unmarshal(data, v)
}

// usageObject is a provider's usage object, decoded in the answer's own pass and kept as
// received for the usage record. Before decoding, src must be set to the whole answer.
type usageObject[T any] struct {
	v   T
	raw []byte // the object as received; nil when absent
	err error  // the object did not decode into T (set on the encoding/json path only)
	src []byte // the answer being decoded
}

// UnmarshalJSONFrom is the JSON v2 path: the object is decoded where it stands, and its bytes
// are cut from the answer between the decoder's offsets (after the name, after the value).
func (u *usageObject[T]) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	start := dec.InputOffset()
	if err := jsonv2.UnmarshalDecode(dec, &u.v); err != nil {
		return err
	}
	end := dec.InputOffset()
	if start < 0 || end > int64(len(u.src)) || start > end {
		return errors.New("usage object outside the answer")
	}
	u.raw = bytes.TrimLeft(u.src[start:end], " \t\r\n:")
	return nil
}

// UnmarshalJSON is the encoding/json path, taken when the v2 decoder refused the answer: an
// object that does not decode into T is remembered, not fatal, so that the answer's failure
// is described as an unreadable usage object.
func (u *usageObject[T]) UnmarshalJSON(b []byte) error {
	u.raw = bytes.Clone(b)
	var v T
	if err := json.Unmarshal(b, &v); err != nil {
		u.err = err
		return nil
	}
	u.v = v
	return nil
}

// target is where one configured provider's requests go: its header (shared read-only by every
// request; a RoundTripper must not modify a request) and its parsed URLs.
type target struct {
	base   string
	header http.Header
	urls   syncMap[string, *url.URL] // by model, parsed once; max: maxCachedURLs
}

// maxCachedURLs bounds the URLs a target keeps parsed: past that many models, a URL is parsed
// on every call.
const maxCachedURLs = 256

func newTarget(p provider, cfg ProviderConfig) *target {
	kv := p.headers(cfg.APIKey)
	h := make(http.Header, 2+len(kv)/2)
	h["Content-Type"], h["Accept"] = jsonMediaType, jsonMediaType
	for i := 0; i+1 < len(kv); i += 2 {
		h[kv[i]] = []string{kv[i+1]}
	}
	t := &target{base: cfg.BaseURL, header: h}
	t.urls.max = maxCachedURLs
	return t
}

// jsonMediaType is shared by every request: the transport only reads headers.
var jsonMediaType = []string{"application/json"}

// url returns the URL of a request for model, shared read-only.
func (t *target) url(p provider, model string) (*url.URL, error) {
	if u, ok := t.urls.get(model); ok {
		return u, nil
	}
	u, err := url.Parse(t.base + p.path(model))
	if err != nil {
		return nil, err
	}
	t.urls.add(model, u)
	return u, nil
}

// newRequest returns the POST of c to the provider.
func (t *target) newRequest(ctx context.Context, p provider, c *call) (*http.Request, error) {
	u, err := t.url(p, c.model)
	if err != nil {
		return nil, err
	}
	size := 128 + len(c.model)
	for _, m := range c.messages {
		size += 40 + len(m.Role) + len(m.Content)
	}
	j := jsonBuf{b: make([]byte, 0, size)}
	p.appendBody(&j, c)
	if j.err != nil {
		return nil, j.err
	}
	// The request is built around the parsed URL and the shared header rather than from a URL
	// string, which would be parsed again on every call.
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "", bytes.NewReader(j.b))
	if err != nil {
		return nil, err
	}
	req.URL, req.Host, req.Header = u, u.Host, t.header
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
