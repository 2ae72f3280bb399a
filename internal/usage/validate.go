package usage

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"unicode/utf8"
)

// Limits of a Record. A record outside them is set aside (see Rejected), never written as given.
const (
	MaxTokens     = 1_000_000_000 // per count and call; the provider answer is refused above it
	MaxCost       = 1_000_000     // USD per call
	maxIDLen      = 128           // request, user and provider request ids
	maxNameLen    = 256           // provider, model
	maxErrorLen   = 1024          // the error text is cut to this, on a rune boundary
	maxPriceEntry = 256
)

// errInvalid marks a record that breaks the limits: it is set aside, not retried.
var errInvalid = errors.New("invalid usage record")

// validate checks rec's strings (UTF-8, no NUL, bounded) and numbers (finite, in range), and
// cuts the error text to maxErrorLen. The rollup sums at most BatchSize records, so bounded
// counts cannot overflow its int64 counters.
func validate(rec *Record) error {
	for _, f := range []struct {
		name, v  string
		max      int
		required bool
	}{
		{"requestId", rec.RequestID, maxIDLen, true},
		{"userId", rec.UserID, maxIDLen, true},
		{"provider", rec.Provider, maxNameLen, true},
		{"model", rec.Model, maxNameLen, false},
		{"providerRequestId", rec.ProviderRequestID, maxIDLen, false},
	} {
		if err := checkString(f.v, f.max, f.required); err != nil {
			return fmt.Errorf("%w: %s %s", errInvalid, f.name, err)
		}
	}
	switch rec.Status {
	case StatusSuccess, StatusError, StatusCanceled:
	default:
		return fmt.Errorf("%w: status %q is not one of %s, %s, %s", errInvalid, clip(rec.Status, 32), StatusSuccess, StatusError, StatusCanceled)
	}
	for _, c := range []struct {
		name string
		v    int64
	}{
		{"promptTokens", rec.PromptTokens}, {"completionTokens", rec.CompletionTokens},
		{"cachedTokens", rec.CachedTokens}, {"cacheWriteTokens", rec.CacheWriteTokens},
	} {
		if c.v < 0 || c.v > MaxTokens {
			return fmt.Errorf("%w: %s %d is outside 0..%d", errInvalid, c.name, c.v, MaxTokens)
		}
	}
	if rec.TotalTokens < 0 || rec.TotalTokens > 2*MaxTokens {
		return fmt.Errorf("%w: totalTokens %d is outside 0..%d", errInvalid, rec.TotalTokens, 2*MaxTokens)
	}
	if !(rec.Cost >= 0 && rec.Cost <= MaxCost) { // NaN fails both
		return fmt.Errorf("%w: cost %v is outside 0..%d", errInvalid, rec.Cost, MaxCost)
	}
	if rec.Attempts < 0 || rec.LatencyMs < 0 || rec.UpstreamStatus < 0 || rec.UpstreamStatus > 999 {
		return fmt.Errorf("%w: attempts, latencyMs or upstreamStatus out of range", errInvalid)
	}
	if p := rec.Prices; p != nil {
		if err := checkString(p.Entry, maxPriceEntry, false); err != nil {
			return fmt.Errorf("%w: prices.entry %s", errInvalid, err)
		}
		for _, v := range []float64{p.Input, p.Output, p.CacheRead, p.CacheWrite} {
			if !(v >= 0 && v <= MaxCost) {
				return fmt.Errorf("%w: a unit price %v is out of range", errInvalid, v)
			}
		}
	}
	rec.Error = clip(strings.ReplaceAll(rec.Error, "\x00", ""), maxErrorLen)
	rec.Cost = RoundCost(rec.Cost)
	return nil
}

func checkString(s string, maxLen int, required bool) error {
	switch {
	case required && s == "":
		return errors.New("is empty")
	case len(s) > maxLen:
		return fmt.Errorf("is longer than %d bytes", maxLen)
	case strings.IndexByte(s, 0) >= 0:
		return errors.New("holds a NUL")
	case !utf8.ValidString(s):
		return errors.New("is not UTF-8")
	}
	return nil
}

// clip cuts s to at most n bytes on a rune boundary and makes it valid UTF-8.
func clip(s string, n int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// sanitized is a copy of rec that can be stored whatever it holds: its strings clipped and
// free of NUL, for the record of a rejection.
func sanitized(rec Record) Record {
	c := func(s string, n int) string { return clip(strings.ReplaceAll(s, "\x00", "\uFFFD"), n) }
	rec.RequestID, rec.UserID = c(rec.RequestID, maxIDLen), c(rec.UserID, maxIDLen)
	rec.Provider, rec.Model = c(rec.Provider, maxNameLen), c(rec.Model, maxNameLen)
	rec.Status, rec.Error = c(rec.Status, 32), c(rec.Error, maxErrorLen)
	rec.ProviderRequestID = c(rec.ProviderRequestID, maxIDLen)
	if rec.Prices != nil {
		p := *rec.Prices
		p.Entry = c(p.Entry, maxPriceEntry)
		rec.Prices = &p
	}
	if math.IsNaN(rec.Cost) || math.IsInf(rec.Cost, 0) {
		rec.Cost = -1
	}
	return rec
}
