package templates

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"go.mongodb.org/mongo-driver/bson"

	"github.com/acme/app/internal/validate"
)

// Template is a property template as the API, the CLI's --json and the database agree on it.
type Template struct {
	// ID is the identifier templates are deduplicated by. In core_property_templates it is the
	// document's _id.
	ID          string     `json:"id"`
	Name        string     `json:"name"`
	WidgetType  string     `json:"widgetType"`
	Properties  []Value    `json:"properties"`
	Description string     `json:"description,omitempty"`
	CreatedAt   *Timestamp `json:"createdAt,omitempty"`
	UpdatedAt   *Timestamp `json:"updatedAt,omitempty"`
}

// Source says where a read was answered from.
type Source string

// The sources of a read.
const (
	SourceCore  Source = "core"  // the shared core collection
	SourceSpace Source = "space" // the space's own property_templates (core was unavailable)
)

// Bounds of a template, so that one user cannot make the shared list too large to read: an
// id travels in URL paths; a name and a description are labels; properties are widget
// settings (a select's options included), measured as stored. Texts are measured in
// characters (code points), as their messages say, not in bytes.
const (
	maxIDLength          = 256
	maxNameLength        = 256
	maxDescriptionLength = 4096
	maxPropertiesBytes   = 64 << 10
)

// listBatch is how many documents one reply of a template list carries: with templates
// bounded, a reply stays a few megabytes, however many templates there are.
const listBatch = 100

// Input is the body of a create or update.
type Input struct {
	ID          string // empty: generated on create
	Name        string
	WidgetType  string
	Properties  []Value
	Description *string
}

// DecodeInput reads a create or update body from its raw JSON fields and validates it. The
// error is an Invalid validation error whose messages use class-validator's wording. Unknown
// fields (and createdAt/updatedAt, which the service sets) are ignored.
func DecodeInput(fields map[string]json.RawMessage) (Input, error) {
	f := inputFields{text: fields}
	var props []json.RawMessage
	if raw := fields["properties"]; !validate.IsNull(raw) && json.Unmarshal(raw, &props) == nil {
		f.isArray = true
		f.properties = make([]bson.RawValue, len(props))
		for i, p := range props {
			var v Value
			err := v.UnmarshalJSON(p)
			switch {
			case err == nil:
				f.properties[i] = v.raw
			case bytes.HasPrefix(bytes.TrimSpace(p), []byte("{")):
				// An object all the same: name why it cannot be stored, rather than report it
				// as no object. It stands as an empty one for the rules that follow.
				f.msgs = append(f.msgs, fmt.Sprintf("properties.%d cannot be stored: %s", i, unstorableReason(err)))
				f.properties[i] = bson.RawValue{Type: bson.TypeEmbeddedDocument, Value: emptyDocument}
			}
		}
	}
	in, msgs := f.validate()
	if len(msgs) > 0 {
		return Input{}, validation(msgs...)
	}
	return in, nil
}

// emptyDocument is {} as BSON.
var emptyDocument = []byte{5, 0, 0, 0, 0}

// unstorableReason says, for a client, why a property object could not be read as a document
// (err from Value.UnmarshalJSON).
func unstorableReason(err error) string {
	switch msg := err.Error(); {
	case strings.Contains(msg, "null bytes"):
		return "a key must not contain a NUL character"
	case errors.Is(err, strconv.ErrRange) || strings.Contains(msg, "out of range"):
		return "a number is out of range"
	default:
		return "it holds a malformed Extended JSON value"
	}
}

// inputFields are a template's fields as validate reads them, from a request body (DecodeInput)
// or from a space's document (storedFields), so that the API and the migration apply one rule.
type inputFields struct {
	// text holds id, name, widgetType and description as JSON (nil: absent), as package validate
	// reads them.
	text map[string]json.RawMessage
	// properties are the elements of properties, each as it would be stored (Type 0: an
	// element that could not be read); isArray is false when properties is not an array.
	properties []bson.RawValue
	isArray    bool
	// msgs are failures found while reading the fields.
	msgs []string
}

// validate applies the rules of a template to f. It returns the input they make, and the
// failures in class-validator's wording (none: the input is valid).
func (f inputFields) validate() (Input, []string) {
	var in Input
	msgs := slices.Clone(f.msgs)
	// optional reads an optional string property: ok is false when it is missing, null or not
	// a string (reported).
	optional := func(name string) (s string, ok bool) {
		raw := f.text[name]
		if validate.IsNull(raw) {
			return "", false
		}
		if s, ok = validate.String(raw); !ok {
			msgs = append(msgs, validate.IsString(name))
		}
		return s, ok
	}
	required := func(name string) string {
		s, failed := validate.RequiredString(name, f.text[name])
		msgs = append(msgs, failed...)
		return s
	}
	if id, ok := optional("id"); ok {
		switch {
		case id == "":
			msgs = append(msgs, validate.NotEmpty("id"))
		case utf8.RuneCountInString(id) > maxIDLength:
			msgs = append(msgs, validate.MaxLength("id", maxIDLength))
		}
		in.ID = id
	}
	in.Name = required("name")
	if utf8.RuneCountInString(in.Name) > maxNameLength {
		msgs = append(msgs, validate.MaxLength("name", maxNameLength))
	}
	in.WidgetType = required("widgetType")
	if utf8.RuneCountInString(in.WidgetType) > maxIDLength {
		msgs = append(msgs, validate.MaxLength("widgetType", maxIDLength))
	}
	if d, ok := optional("description"); ok {
		if utf8.RuneCountInString(d) > maxDescriptionLength {
			msgs = append(msgs, validate.MaxLength("description", maxDescriptionLength))
		}
		in.Description = &d
	}
	if !f.isArray {
		msgs = append(msgs, validate.IsArray("properties"))
	} else {
		in.Properties = make([]Value, 0, len(f.properties))
		objects, size := true, 0
		for i, p := range f.properties {
			if p.Type != bson.TypeEmbeddedDocument {
				objects = false
				continue
			}
			if msg := storable(fmt.Sprintf("properties.%d", i), p, 1); msg != "" {
				msgs = append(msgs, msg)
			}
			size += len(p.Value)
			in.Properties = append(in.Properties, Value{raw: p})
		}
		if !objects {
			msgs = append(msgs, validate.EachObject("properties"))
		}
		if size > maxPropertiesBytes {
			msgs = append(msgs, fmt.Sprintf("properties must take at most %d bytes as stored (they take %d)", maxPropertiesBytes, size))
		}
	}
	return in, msgs
}

// storedFields reads a space's document as validate reads a request body: the template a
// client would have to send to create it, with id its identifier. A string field holding
// invalid UTF-8 is refused as the API refuses such a body.
func storedFields(doc bson.Raw, id string) inputFields {
	f := inputFields{text: map[string]json.RawMessage{}}
	f.text["id"], _ = json.Marshal(id)
	for _, name := range [...]string{"name", "widgetType", "description"} {
		v, err := doc.LookupErr(name)
		switch {
		case err != nil:
		case v.Type == bson.TypeString:
			if !utf8.ValidString(v.StringValue()) {
				f.msgs = append(f.msgs, name+" must be valid UTF-8")
			}
			f.text[name], _ = json.Marshal(v.StringValue())
		case v.Type == bson.TypeNull || v.Type == bson.TypeUndefined:
			f.text[name] = json.RawMessage("null")
		default:
			f.text[name] = json.RawMessage("{}") // not a string
		}
	}
	if arr, ok := doc.Lookup("properties").ArrayOK(); ok {
		f.isArray = true
		f.properties, _ = arr.Values()
		if f.properties == nil {
			f.properties = []bson.RawValue{}
		}
	}
	return f
}

// maxPropertyDepth bounds how deeply a property object may nest objects and arrays.
const maxPropertyDepth = 32

// storable returns why the property value v (at path, depth levels down) cannot be stored as
// sent, or "". A property is stored as a document, so its keys become field names: a key that
// starts with $ or holds a dot names an operator or a path to the database, not a field. Its
// values must be JSON's own (what the body reads as when no key starts with $: the database
// holds more types, such as dates and JavaScript, which a client has no reason to send). An
// array must not hold an array: the embedded store cannot hold one, and a template must be
// able to move between stores (a migration, a move to or from MongoDB).
func storable(path string, v bson.RawValue, depth int) string {
	switch v.Type {
	case bson.TypeEmbeddedDocument, bson.TypeArray:
		if depth > maxPropertyDepth {
			return fmt.Sprintf("%s must not be nested deeper than %d levels", path, maxPropertyDepth)
		}
		elems, err := bson.Raw(v.Value).Elements()
		if err != nil {
			return path + " must be an object"
		}
		seen := map[string]bool{}
		for _, e := range elems {
			key := e.Key()
			if v.Type == bson.TypeEmbeddedDocument && (strings.HasPrefix(key, "$") || strings.Contains(key, ".")) {
				return fmt.Sprintf("%s must not hold the key %q: keys must not start with $ or contain a dot", path, key)
			}
			if v.Type == bson.TypeEmbeddedDocument && seen[key] {
				return fmt.Sprintf("%s must not hold the key %q twice", path, key)
			}
			seen[key] = true
			if v.Type == bson.TypeArray && e.Value().Type == bson.TypeArray {
				return fmt.Sprintf("%s.%s must not be an array: an array cannot hold arrays", path, key)
			}
			if msg := storable(path+"."+key, e.Value(), depth+1); msg != "" {
				return msg
			}
		}
	case bson.TypeDouble:
		if f := v.Double(); math.IsNaN(f) || math.IsInf(f, 0) {
			return path + " must be a finite number"
		}
	case bson.TypeString, bson.TypeInt32, bson.TypeInt64, bson.TypeBoolean, bson.TypeNull:
	default:
		return path + " must hold only strings, numbers, booleans, null, objects and arrays"
	}
	return ""
}

// fromRaw reads a stored template leniently: space databases may hold older, looser documents.
// space selects the identifier rule: in a space, `id` when present, else `_id`; in core, `_id`.
func fromRaw(doc bson.Raw, space bool) Template {
	t := Template{ID: identifier(doc, space), Properties: []Value{}}
	if v, ok := doc.Lookup("name").StringValueOK(); ok {
		t.Name = v
	}
	if v, ok := doc.Lookup("widgetType").StringValueOK(); ok {
		t.WidgetType = v
	}
	if v, ok := doc.Lookup("description").StringValueOK(); ok {
		t.Description = v
	}
	if arr, ok := doc.Lookup("properties").ArrayOK(); ok {
		vals, _ := arr.Values()
		for _, v := range vals {
			t.Properties = append(t.Properties, storedValue(v.Type, v.Value))
		}
	}
	t.CreatedAt = timeOf(doc.Lookup("createdAt"))
	t.UpdatedAt = timeOf(doc.Lookup("updatedAt"))
	return t
}

// identifier returns a stored template's identifier (see fromRaw), "" when it has none.
func identifier(doc bson.Raw, space bool) string {
	if space {
		if id, ok := stringOf(doc.Lookup("id")); ok && id != "" {
			return id
		}
	}
	v := doc.Lookup("_id")
	if id, ok := stringOf(v); ok {
		return id
	}
	if v.Type == 0 {
		return ""
	}
	return v.String() // an unusual _id (a document, say): its extended JSON
}

// stringOf stringifies an identifier value: strings as is, ObjectIds as hex, integers in decimal.
func stringOf(v bson.RawValue) (string, bool) {
	switch v.Type {
	case bson.TypeString:
		return v.StringValue(), true
	case bson.TypeObjectID:
		return v.ObjectID().Hex(), true
	case bson.TypeInt32:
		return strconv.FormatInt(int64(v.Int32()), 10), true
	case bson.TypeInt64:
		return strconv.FormatInt(v.Int64(), 10), true
	case bson.TypeDouble:
		return strconv.FormatFloat(v.Double(), 'f', -1, 64), true
	default:
		return "", false
	}
}

// Timestamps are answered only in the years 0 to 9999, which ISO 8601 (JSON's date-time, and
// JavaScript's toISOString without its extended years) writes with four digits: the bounds in
// milliseconds since the epoch.
var (
	minTimeMs = time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
	maxTimeMs = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli() - 1
)

// storedTime reads a timestamp stored as a date, an ISO 8601 string or epoch milliseconds. ok
// is false when v holds none of these (it is then no timestamp at all); inRange is false when
// it is one outside the years 0 to 9999 (or a NaN or infinite number of milliseconds).
func storedTime(v bson.RawValue) (t time.Time, ok, inRange bool) {
	var ms int64
	switch v.Type {
	case bson.TypeDateTime:
		ms = v.DateTime()
	case bson.TypeString:
		p, err := time.Parse(time.RFC3339Nano, v.StringValue())
		if err != nil {
			return time.Time{}, false, false
		}
		p = p.UTC() // "0000-01-01T00:00:00+01:00" is in year -1
		return p, true, p.Year() >= 0 && p.Year() <= 9999
	case bson.TypeInt64:
		ms = v.Int64()
	case bson.TypeDouble:
		f := v.Double()
		if math.IsNaN(f) || f < float64(minTimeMs) || f > float64(maxTimeMs) {
			return time.Time{}, true, false
		}
		ms = int64(f)
	default:
		return time.Time{}, false, false
	}
	if ms < minTimeMs || ms > maxTimeMs {
		return time.Time{}, true, false
	}
	return time.UnixMilli(ms).UTC(), true, true
}

// timeOf reads a timestamp as storedTime does; nil when there is none, or it is outside the
// years 0 to 9999 (such a template is answered without it).
func timeOf(v bson.RawValue) *Timestamp {
	t, ok, inRange := storedTime(v)
	if !ok || !inRange {
		return nil
	}
	return &Timestamp{t}
}

// Timestamp is a template's createdAt or updatedAt. It is written in JSON as JavaScript's
// Date.toISOString writes a time, as the service this one replaces answered it and as property
// values are written: in UTC, always with three fractional digits ("2026-11-28T02:30:48.510Z",
// where time.Time writes "…48.51Z").
type Timestamp struct{ time.Time }

// MarshalJSON writes the timestamp as toISOString does.
func (t Timestamp) MarshalJSON() ([]byte, error) {
	return appendJSTime(make([]byte, 0, len(jsTime)+2), t.Time), nil
}
