// Package usage records AI requests and answers questions about them. It owns two
// collections: ai_requests (one document per AI request, success or failure) and
// ai_usage_daily (the rollup every read uses: one document per user and UTC day, holding
// per-provider/model counters).
package usage

import (
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/bson/bsontype"
)

// Collection names owned by this package.
const (
	RequestsCollection = "ai_requests"
	DailyCollection    = "ai_usage_daily"
)

// Status values of a Record.
const (
	StatusSuccess  = "success"
	StatusError    = "error"
	StatusCanceled = "canceled" // the caller went away before the provider answered
)

// UnitPrices are the per-token prices a cost was computed with, kept with each request so the
// cost can be explained and recomputed.
type UnitPrices struct {
	Entry      string  `bson:"entry" json:"entry"` // the price table entry used ("" = unknown model)
	Input      float64 `bson:"input" json:"input"`
	Output     float64 `bson:"output" json:"output"`
	CacheRead  float64 `bson:"cacheRead" json:"cacheRead"`
	CacheWrite float64 `bson:"cacheWrite" json:"cacheWrite"`
}

// Record is one AI request as stored in ai_requests. Its _id is the request id, so writing
// the same record twice (a retried batch) stores it once.
type Record struct {
	RequestID         string      `bson:"_id"`
	UserID            string      `bson:"userId"`
	Provider          string      `bson:"provider"`
	Model             string      `bson:"model"`
	Status            string      `bson:"status"`                  // StatusSuccess, StatusError, StatusCanceled
	UpstreamStatus    int         `bson:"upstreamStatus"`          // the provider's last HTTP status (0: none)
	Error             string      `bson:"error,omitempty"`         // what went wrong (never a secret)
	PromptTokens      int64       `bson:"promptTokens"`            //
	CompletionTokens  int64       `bson:"completionTokens"`        //
	TotalTokens       int64       `bson:"totalTokens"`             //
	CachedTokens      int64       `bson:"cachedTokens"`            // prompt tokens read from the provider's cache
	CacheWriteTokens  int64       `bson:"cacheWriteTokens"`        // prompt tokens written to it (Anthropic)
	Cost              float64     `bson:"cost"`                    // USD
	Prices            *UnitPrices `bson:"prices,omitempty"`        //
	ProviderUsage     RawJSON     `bson:"providerUsage,omitempty"` // the provider's usage object, as received
	ProviderRequestID string      `bson:"providerRequestId,omitempty"`
	Attempts          int         `bson:"attempts"`  // upstream calls made (retries included)
	LatencyMs         int64       `bson:"latencyMs"` //
	CreatedAt         time.Time   `bson:"createdAt"` //
}

// Day returns the UTC calendar day of t as YYYY-MM-DD, the rollup's day key.
func Day(t time.Time) string { return t.UTC().Format(time.DateOnly) }

// dailyID is the _id of a rollup document: one per user and UTC day.
func dailyID(userID, day string) string { return userID + "|" + day }

// modelKey is the cell name under `m` for a provider and model: dots and dollars cannot appear
// in a field path and '|' separates the parts, so they (and the escape character) are
// percent-escaped.
func modelKey(provider, model string) string {
	return keyEscaper.Replace(provider) + "|" + keyEscaper.Replace(model)
}

// splitModelKey undoes modelKey.
func splitModelKey(key string) (provider, model string) {
	p, m, _ := strings.Cut(key, "|")
	return keyUnescaper.Replace(p), keyUnescaper.Replace(m)
}

var (
	keyEscaper   = strings.NewReplacer("%", "%25", ".", "%2E", "$", "%24", "|", "%7C")
	keyUnescaper = strings.NewReplacer("%25", "%", "%2E", ".", "%24", "$", "%7C", "|")
)

// The counters of a cell, suffixed to its name: "<provider>|<model>|n".
const (
	fieldRequests = "n" // requests
	fieldTokens   = "t" // total tokens
	fieldCost     = "c" // cost, USD
)

// modelTotals are the counters of one provider and model.
type modelTotals struct {
	Requests    int64
	TotalTokens int64
	Cost        float64
}

// A rollup document of ai_usage_daily is one per user and UTC day:
//
//	{_id: "<userId>|<day>", userId, day: "YYYY-MM-DD", m: {"openai|gpt-4o-mini|n": 3, "…|t": 120, "…|c": 0.00004},
//	 w: {"<writer>": 17}}
//
// Its counters are flat scalars in `m`: that is what the embedded store decodes fastest, and
// $inc creates them on first use. `w` holds, per recorder (a random id for each process), the
// sequence number of the last batch it added, so that a batch re-sent after a lost answer is
// not added twice.

// RawJSON is a JSON object kept as received and stored as a BSON document. The conversion
// happens when the recorder writes (in the background), not on the request path.
type RawJSON []byte

// MarshalBSONValue stores the object as a document (null when it is not a JSON object).
func (r RawJSON) MarshalBSONValue() (bsontype.Type, []byte, error) {
	var doc bson.D
	if len(r) == 0 || bson.UnmarshalExtJSON(r, false, &doc) != nil {
		return bson.TypeNull, nil, nil
	}
	return bson.MarshalValue(doc)
}

// UnmarshalBSONValue reads a stored document back as relaxed extended JSON.
func (r *RawJSON) UnmarshalBSONValue(t bsontype.Type, data []byte) error {
	if t != bson.TypeEmbeddedDocument {
		*r = nil
		return nil
	}
	js, err := bson.MarshalExtJSON(bson.Raw(data), false, false)
	if err != nil {
		return err
	}
	*r = js
	return nil
}
