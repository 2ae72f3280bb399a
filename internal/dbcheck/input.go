package dbcheck

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"go.mongodb.org/mongo-driver/bson"

	"github.com/acme/app/internal/validate"
)

// TestInput is the body of POST /api/storage/mongodb/test.
type TestInput struct {
	ConnectionString string
	Database         string
}

// QueryInput is the body of POST /api/storage/mongodb/query.
type QueryInput struct {
	ConnectionString string
	Database         string
	Collection       string
	// Filter is MongoDB Extended JSON text (an object); empty or "null" matches everything.
	Filter []byte
	// Limit is the number of documents to return at most; nil means DefaultLimit.
	Limit *int

	// filter is filterText parsed by validate; validate reuses it while Filter still holds
	// the same text, so that ParseQuery and then Query parse a filter once.
	filter     bson.Raw
	filterText []byte
}

// DefaultLimit is the query limit when none is given.
const DefaultLimit = 100

// maxFilterDepth bounds the nesting of a filter (MongoDB allows 100 levels of BSON; no real
// filter needs a third of that, and a deep one is a way to burn CPU).
const maxFilterDepth = 32

// refusedOperators run JavaScript on the server; they are refused at any depth of a filter.
var refusedOperators = map[string]bool{"$where": true, "$function": true, "$accumulator": true}

// ParseTest reads a test request's fields, checking their JSON types and values; it returns
// every failed rule in class-validator's wording.
func ParseTest(fields map[string]json.RawMessage) (TestInput, []string) {
	var in TestInput
	var msgs []string
	in.ConnectionString = str(fields, "connectionString", &msgs)
	in.Database = str(fields, "database", &msgs)
	msgs = append(msgs, in.validate()...)
	return in, dedupe(msgs)
}

// ParseQuery reads a query request's fields, checking their JSON types and values against
// dbcheck.max_limit; it returns every failed rule in class-validator's wording.
func (s *Service) ParseQuery(fields map[string]json.RawMessage) (QueryInput, []string) {
	return parseQuery(fields, s.opts.MaxLimit)
}

func parseQuery(fields map[string]json.RawMessage, maxLimit int) (QueryInput, []string) {
	var in QueryInput
	var msgs []string
	in.ConnectionString = str(fields, "connectionString", &msgs)
	in.Database = str(fields, "database", &msgs)
	in.Collection = str(fields, "collection", &msgs)
	if raw := fields["filter"]; !validate.IsNull(raw) {
		if t := bytes.TrimSpace(raw); len(t) > 0 && t[0] == '{' {
			in.Filter = t
		} else {
			msgs = append(msgs, validate.IsObject("filter"))
		}
	}
	if raw := fields["limit"]; !validate.IsNull(raw) {
		if f, ok := validate.Integer(raw); !ok {
			msgs = append(msgs, validate.IsInt("limit"))
		} else {
			n := int(max(min(f, math.MaxInt32), math.MinInt32))
			in.Limit = &n
		}
	}
	msgs = append(msgs, in.validate(maxLimit)...)
	return in, dedupe(msgs)
}

// str returns the string property name of fields ("" when it is missing or null), reporting
// any other JSON type.
func str(fields map[string]json.RawMessage, name string, msgs *[]string) string {
	raw := fields[name]
	if validate.IsNull(raw) {
		return ""
	}
	s, ok := validate.String(raw)
	if !ok {
		*msgs = append(*msgs, validate.IsString(name))
	}
	return s
}

func dedupe(msgs []string) []string {
	seen := make(map[string]bool, len(msgs))
	out := msgs[:0]
	for _, m := range msgs {
		if !seen[m] {
			seen[m] = true
			out = append(out, m)
		}
	}
	return out
}

// validate returns the failed rules of a test input.
func (in TestInput) validate() []string {
	var msgs []string
	if in.ConnectionString == "" {
		msgs = append(msgs, validate.NotEmpty("connectionString"))
	} else if !strings.HasPrefix(in.ConnectionString, "mongodb://") && !strings.HasPrefix(in.ConnectionString, "mongodb+srv://") {
		msgs = append(msgs, "connectionString must start with mongodb:// or mongodb+srv://")
	}
	msgs = append(msgs, databaseRules(in.Database)...)
	return msgs
}

// validate returns the failed rules of a query input; maxLimit is dbcheck.max_limit. When
// Filter parses, in.filter holds the parsed filter.
func (in *QueryInput) validate(maxLimit int) []string {
	msgs := TestInput{ConnectionString: in.ConnectionString, Database: in.Database}.validate()
	msgs = append(msgs, collectionRules(in.Collection)...)
	if in.Limit != nil {
		if *in.Limit < 1 {
			msgs = append(msgs, validate.Min("limit", 1))
		} else if *in.Limit > maxLimit {
			msgs = append(msgs, validate.Max("limit", maxLimit))
		}
	}
	if in.filter == nil || !bytes.Equal(in.filterText, in.Filter) {
		if filter, err := parseFilter(in.Filter); err != nil {
			msgs = append(msgs, err.Error())
		} else {
			in.filter, in.filterText = filter, in.Filter
		}
	}
	return msgs
}

// databaseRules checks a database name as MongoDB does on Unix.
func databaseRules(name string) []string {
	if reason := validate.DatabaseName(name); reason != "" {
		return []string{"database " + reason}
	}
	return nil
}

// collectionRules checks a collection name.
func collectionRules(name string) []string {
	switch {
	case name == "":
		return []string{validate.NotEmpty("collection")}
	case len(name) > 255:
		return []string{"collection must be shorter than 256 characters"}
	case strings.ContainsAny(name, "$\x00"):
		return []string{"collection must not contain $ or NUL"}
	case strings.HasPrefix(name, "system."):
		return []string{"collection must not be a system collection (system.*)"}
	}
	return nil
}

// filterError is a filter refused before it reaches the server; its text is client-safe.
type filterError struct{ msg string }

func (e *filterError) Error() string { return e.msg }

// parseFilter turns Extended JSON text into BSON and refuses server-side JavaScript
// ($where, $function, $accumulator and JavaScript values) at any depth, and filters nested
// deeper than maxFilterDepth.
func parseFilter(text []byte) (bson.Raw, error) {
	if len(bytes.TrimSpace(text)) == 0 || bytes.Equal(bytes.TrimSpace(text), []byte("null")) {
		return bson.Raw(emptyDoc), nil
	}
	// One JSON object, nothing after it: the Extended JSON reader stops at the end of the
	// first value and would run a query the operator did not write.
	var one json.RawMessage
	if err := json.Unmarshal(text, &one); err != nil {
		return nil, &filterError{"filter must be valid MongoDB Extended JSON: " + err.Error()}
	}
	if one[0] != '{' {
		return nil, &filterError{"filter must be an object"}
	}
	if jsonDepth(text) > maxFilterDepth {
		return nil, &filterError{fmt.Sprintf("filter must not be nested deeper than %d levels", maxFilterDepth)}
	}
	var d bson.D
	if err := bson.UnmarshalExtJSON(text, false, &d); err != nil {
		return nil, &filterError{"filter must be valid MongoDB Extended JSON: " + err.Error()}
	}
	raw, err := bson.Marshal(d)
	if err != nil {
		return nil, &filterError{"filter must be valid MongoDB Extended JSON: " + err.Error()}
	}
	if err := checkDoc(bson.Raw(raw)); err != nil {
		return nil, err
	}
	return raw, nil
}

var emptyDoc = []byte{5, 0, 0, 0, 0}

func checkDoc(doc bson.Raw) error {
	elems, err := doc.Elements()
	if err != nil {
		return &filterError{"filter is not a valid document"}
	}
	for _, e := range elems {
		if key := e.Key(); refusedOperators[key] {
			return &filterError{fmt.Sprintf("filter must not use the %s operator: server-side JavaScript is not allowed", key)}
		}
		if err := checkValue(e.Value()); err != nil {
			return err
		}
	}
	return nil
}

func checkValue(v bson.RawValue) error {
	switch v.Type {
	case bson.TypeEmbeddedDocument:
		return checkDoc(v.Document())
	case bson.TypeArray:
		vals, err := v.Array().Values()
		if err != nil {
			return &filterError{"filter is not a valid document"}
		}
		for _, x := range vals {
			if err := checkValue(x); err != nil {
				return err
			}
		}
	case bson.TypeJavaScript, bson.TypeCodeWithScope:
		return &filterError{"filter must not contain JavaScript code ($code): server-side JavaScript is not allowed"}
	}
	return nil
}

// jsonDepth returns the deepest nesting of objects and arrays in JSON text.
func jsonDepth(text []byte) int {
	depth, deepest := 0, 0
	inString, escaped := false, false
	for _, c := range text {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			depth++
			deepest = max(deepest, depth)
		case c == '}' || c == ']':
			depth--
		}
	}
	return deepest
}
