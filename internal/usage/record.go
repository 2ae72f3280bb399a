// Package usage records AI requests and answers questions about them. It owns six
// collections: ai_requests (one document per AI request, success or failure), ai_usage_daily
// (the rollup every read uses: one document per user and UTC day, holding
// per-provider/model counters), ai_usage_monthly (each day's totals, one document per user
// and UTC month, for the per-day view), ai_prices (the unit prices records were costed with,
// once each), ai_models (the provider and model of each rollup cell key) and usage_rejected
// (records set aside: see Service.Record).
package usage

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"strings"
	"time"
)

// Collection names owned by this package.
const (
	RequestsCollection = "ai_requests"
	DailyCollection    = "ai_usage_daily"
	MonthlyCollection  = "ai_usage_monthly" // each day's totals, per user and month
	RejectedCollection = "usage_rejected"   // records the recorder set aside, with the reason
	PricesCollection   = "ai_prices"        // the unit prices records were costed with, once each
	ModelsCollection   = "ai_models"        // the provider and model of each rollup cell key
)

// Status values of a Record.
const (
	StatusSuccess  = "success"
	StatusError    = "error"
	StatusCanceled = "canceled" // the caller went away before the provider answered
)

// UnitPrices are the per-token prices a cost was computed with, kept with each request so the
// cost can be explained and recomputed. Stored under short names (see Record).
type UnitPrices struct {
	Entry      string  `bson:"e" json:"entry"` // the price table entry used ("" = unknown model)
	Input      float64 `bson:"i" json:"input"`
	Output     float64 `bson:"o" json:"output"`
	CacheRead  float64 `bson:"r,omitempty" json:"cacheRead"`
	CacheWrite float64 `bson:"w,omitempty" json:"cacheWrite"`
	// CacheWrite1h is the rate of cache writes kept an hour, when the call had some.
	CacheWrite1h float64 `bson:"w1,omitempty" json:"cacheWrite1h,omitempty"`
}

// Record is one AI request as stored in ai_requests. Its _id is the request id, so writing
// the same record twice (a retried batch) stores it once.
//
// The fields another query may select on (userId, status, cost, createdAt) keep readable names;
// the others are stored under short names (p provider, m model, tt total tokens, in/out prompt
// and completion tokens, …), and zeros are left out: the embedded store keeps every field name
// of every document twice more in a per-document schema, so names were half of a record's size
// (see docs/performance.md). Records of earlier versions used the long names.
type Record struct {
	RequestID         string      `bson:"_id"`
	UserID            string      `bson:"userId"`
	Provider          string      `bson:"p"`
	Model             string      `bson:"m"`
	Status            string      `bson:"status"`         // StatusSuccess, StatusError, StatusCanceled
	UpstreamStatus    int         `bson:"us,omitempty"`   // the provider's last HTTP status (0: none)
	Error             string      `bson:"err,omitempty"`  // what went wrong (never a secret)
	PromptTokens      int64       `bson:"in"`             //
	CompletionTokens  int64       `bson:"out"`            //
	TotalTokens       int64       `bson:"tt"`             //
	CachedTokens      int64       `bson:"cr,omitempty"`   // prompt tokens read from the provider's cache
	CacheWriteTokens  int64       `bson:"cw,omitempty"`   // prompt tokens written to it (Anthropic)
	CacheWrite1h      int64       `bson:"cw1,omitempty"`  // the part of CacheWriteTokens kept an hour
	Estimated         bool        `bson:"est,omitempty"`  // a count was estimated from the text: a stream ended before the provider's final usage
	Cost              float64     `bson:"cost"`           // USD, rounded by RoundCost
	Prices            *UnitPrices `bson:"-"`              // stored once in ai_prices, referenced by PriceRef
	PriceRef          string      `bson:"px,omitempty"`   // the _id of Prices in ai_prices (set when written)
	ProviderRequestID string      `bson:"prid,omitempty"` //
	Attempts          int         `bson:"att"`            // upstream calls made (retries included)
	LatencyMs         int64       `bson:"ms"`             //
	CreatedAt         time.Time   `bson:"createdAt"`      //
}

// priceRef is the ai_prices _id of a set of unit prices: 16 hex digits of a SHA-256 of them.
func priceRef(p *UnitPrices) string {
	b := fmt.Appendf(nil, "%s\x00%g\x00%g\x00%g\x00%g", p.Entry, p.Input, p.Output, p.CacheRead, p.CacheWrite)
	if p.CacheWrite1h != 0 { // prices without it keep the references they had
		b = fmt.Appendf(b, "\x00%g", p.CacheWrite1h)
	}
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:8])
}

// Day returns the UTC calendar day of t as YYYY-MM-DD, the rollup's day key.
func Day(t time.Time) string { return t.UTC().Format(time.DateOnly) }

// dailyID is the _id of a rollup document: one per user and UTC day.
func dailyID(userID, day string) string { return userID + "|" + day }

// A document of ai_usage_monthly is one per user and UTC month, holding each day's totals
// over every provider and model:
//
//	{_id: "<userId>|<YYYY-MM>", userId, month: "YYYY-MM",
//	 d: {"27|n": 3, "27|t": 120, "27|c": 400000, …}, w: {"<writer>": 17}}
//
// The recorder adds to it in the same step as to the day's rollup document, with the same
// batch mark, so that Daily reads a 90-day window in at most four lookups instead of 90.
// Its document sinceID, {_id: "since", day}, holds the first UTC day whose calls may be
// missing from it (the day the first recorder that writes it started, lowered by Reconcile
// to the day before the window it rebuilt): later days are read from it, that day and
// earlier ones from ai_usage_daily.
const sinceID = "since"

// monthlyID is the _id of userID's monthly document of the month of day (YYYY-MM-DD).
func monthlyID(userID, day string) string { return userID + "|" + monthOf(day) }

// monthOf is the month (YYYY-MM) of day (YYYY-MM-DD).
func monthOf(day string) string { return day[:len("2006-01")] }

// dayCell is the name, in a monthly document's d, of day's counter field ("27|n").
func dayCell(day, field string) string { return day[len("2006-01-"):] + "|" + field }

// cellKey is the name of the rollup cell of a provider and model: "k" and 16 hex digits of a
// SHA-256 of both. Its names are stored as values in ai_models ({_id: key, p, m}), so nothing a
// provider sends becomes a document key; the key is ours, and safe in a field path. Provider
// and model hold no NUL (see validate), so the separator keeps two pairs apart.
func cellKey(provider, model string) string {
	h := sha256.Sum256([]byte(provider + "\x00" + model))
	return "k" + hex.EncodeToString(h[:8])
}

// modelName is a document of ai_models: the provider and model of a cell key.
type modelName struct {
	Key      string `bson:"_id"`
	Provider string `bson:"p"`
	Model    string `bson:"m"`
}

// The counters of a cell, suffixed to its key: "<cellKey>|n".
const (
	fieldRequests = "n" // requests
	fieldTokens   = "t" // total tokens
	fieldCost     = "c" // cost, in units of 10^-10 USD (an integer: sums are exact)
)

// fieldUnanswered is a rollup document's cost of the day's calls that ended without an
// answer (failed or canceled) after the provider reported usage, in the units of fieldCost.
// The provider bills those tokens, so budgets count them; usage reports, which sum answered
// calls, do not.
const fieldUnanswered = "x"

// modelTotals are the counters of one provider and model.
type modelTotals struct {
	Provider, Model string
	Requests        int64
	TotalTokens     int64
	Cost            float64
}

// A rollup document of ai_usage_daily is one per user and UTC day:
//
//	{_id: "<userId>|<day>", userId, day: "YYYY-MM-DD",
//	 m: {"k1f3a…|n": 3, "k1f3a…|t": 120, "k1f3a…|c": 400000, …}, w: {"<writer>": 17}}
//
// Its counters are flat scalars in `m` (what the embedded store decodes fastest; $inc creates
// them on first use), named by cell key; ai_models holds each key's provider and model. One
// update per document adds a batch ($inc of each counter it touches): an atomic update on
// MongoDB. `w` holds, per recorder (a random id for each process, ours, never from input), the
// sequence number of the last batch it added, so that a batch re-sent after a lost answer is
// not added twice.
//
// Rollups written by earlier versions hold cells named "<provider>|<model>|<n|t|c>" (escaped,
// cost in USD); the read side still sums them, and `app usage reconcile` rewrites them.

// splitCounter splits a counter's name into its cell key and field. For a cell of an earlier
// version it also returns the provider and model, and the key they have now.
func splitCounter(name string) (key, field string, legacy *[2]string) {
	i := strings.LastIndexByte(name, '|')
	if i < 0 {
		return "", "", nil
	}
	cell, field := name[:i], name[i+1:]
	if !strings.Contains(cell, "|") {
		return cell, field, nil
	}
	p, m, _ := strings.Cut(cell, "|")
	names := [2]string{legacyUnescaper.Replace(p), legacyUnescaper.Replace(m)}
	return cellKey(names[0], names[1]), field, &names
}

var legacyUnescaper = strings.NewReplacer("%25", "%", "%2E", ".", "%24", "$", "%7C", "|")

// RoundCost rounds a cost in USD to 10 decimal places, so that sums and stored costs carry no
// binary noise (0.0000035, not 0.0000034999999999999995). Every stored or summed cost goes
// through it.
func RoundCost(c float64) float64 {
	if math.IsNaN(c) || math.IsInf(c, 0) {
		return c
	}
	return math.Round(c*1e10) / 1e10
}
