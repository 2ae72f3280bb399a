package templates

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/bson/bsontype"
)

// Value is one JSON value (a template's property object, typically) held as BSON, so that it
// round-trips between the API and the database with its key order and number types intact.
type Value struct {
	raw bson.RawValue
	// json is the value's JSON, encoded once when it was read from the database: a stored
	// template is read once and answered many times (lists are cached). Nil: encode each time.
	json []byte
}

// storedValue copies a value read from the database and encodes its JSON.
func storedValue(t bsontype.Type, b []byte) Value {
	v := Value{raw: bson.RawValue{Type: t, Value: bytes.Clone(b)}}
	if j, err := appendJSON(nil, v.raw); err == nil {
		v.json = j
	}
	return v
}

// MarshalJSON writes the value as JSON: documents as objects in stored order, dates as ISO
// 8601 strings, ObjectIds as hex strings.
func (v Value) MarshalJSON() ([]byte, error) {
	if v.json != nil {
		return v.json, nil
	}
	if v.raw.Type == 0 {
		return []byte("null"), nil
	}
	return appendJSON(nil, v.raw)
}

// UnmarshalJSON reads any JSON value.
func (v *Value) UnmarshalJSON(b []byte) error {
	wrapped := make([]byte, 0, len(b)+6)
	wrapped = append(append(append(wrapped, `{"v":`...), b...), '}')
	var d bson.D
	if err := bson.UnmarshalExtJSON(wrapped, false, &d); err != nil {
		return fmt.Errorf("templates: decode JSON value: %w", err)
	}
	doc, err := bson.Marshal(d)
	if err != nil {
		return fmt.Errorf("templates: encode value: %w", err)
	}
	rv, err := bson.Raw(doc).LookupErr("v")
	if err != nil {
		return errors.New("templates: decode JSON value: empty")
	}
	*v = Value{raw: rv}
	return nil
}

// MarshalBSONValue stores the value as is.
func (v Value) MarshalBSONValue() (bsontype.Type, []byte, error) {
	if v.raw.Type == 0 {
		return bson.TypeNull, nil, nil
	}
	return v.raw.Type, v.raw.Value, nil
}

// UnmarshalBSONValue keeps a copy of the stored value.
func (v *Value) UnmarshalBSONValue(t bsontype.Type, b []byte) error {
	*v = storedValue(t, b)
	return nil
}

// IsObject reports whether the value is a JSON object.
func (v Value) IsObject() bool { return v.raw.Type == bson.TypeEmbeddedDocument }

// appendJSONString appends s as a JSON string. strconv.AppendQuote writes Go syntax, which is
// not JSON for control and non-printable characters (\x01, \U000e0001) or invalid UTF-8; the
// text of regexes, symbols and JavaScript is arbitrary. <, > and & are kept as they are, as
// AppendQuote kept them.
func appendJSONString(dst []byte, s string) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return append(dst, bytes.TrimSuffix(b.Bytes(), []byte{'\n'})...)
}

// jsTime is how JavaScript's Date.toISOString writes a time, as the NestJS service this one
// replaces does.
const jsTime = "2006-01-02T15:04:05.000Z07:00"

// appendJSTime appends t, in UTC, to dst as a JSON string in the form of jsTime.
func appendJSTime(dst []byte, t time.Time) []byte {
	dst = append(dst, '"')
	dst = t.UTC().AppendFormat(dst, jsTime)
	return append(dst, '"')
}

func appendJSON(dst []byte, rv bson.RawValue) ([]byte, error) {
	switch rv.Type {
	case bson.TypeEmbeddedDocument:
		elems, err := rv.Document().Elements()
		if err != nil {
			return nil, err
		}
		dst = append(dst, '{')
		for i, e := range elems {
			if i > 0 {
				dst = append(dst, ',')
			}
			k, _ := json.Marshal(e.Key())
			dst = append(dst, k...)
			dst = append(dst, ':')
			if dst, err = appendJSON(dst, e.Value()); err != nil {
				return nil, err
			}
		}
		return append(dst, '}'), nil
	case bson.TypeArray:
		vals, err := rv.Array().Values()
		if err != nil {
			return nil, err
		}
		dst = append(dst, '[')
		for i, e := range vals {
			if i > 0 {
				dst = append(dst, ',')
			}
			if dst, err = appendJSON(dst, e); err != nil {
				return nil, err
			}
		}
		return append(dst, ']'), nil
	case bson.TypeString:
		s, _ := json.Marshal(rv.StringValue())
		return append(dst, s...), nil
	case bson.TypeDouble:
		f := rv.Double()
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return append(dst, "null"...), nil
		}
		return strconv.AppendFloat(dst, f, 'g', -1, 64), nil
	case bson.TypeInt32:
		return strconv.AppendInt(dst, int64(rv.Int32()), 10), nil
	case bson.TypeInt64:
		return strconv.AppendInt(dst, rv.Int64(), 10), nil
	case bson.TypeDecimal128:
		s := rv.Decimal128().String()
		if _, err := strconv.ParseFloat(s, 64); err == nil {
			return append(dst, s...), nil
		}
		return strconv.AppendQuote(dst, s), nil
	case bson.TypeBoolean:
		return strconv.AppendBool(dst, rv.Boolean()), nil
	case bson.TypeDateTime:
		return appendJSTime(dst, rv.Time()), nil
	case bson.TypeObjectID:
		return strconv.AppendQuote(dst, rv.ObjectID().Hex()), nil
	case bson.TypeBinary:
		_, data := rv.Binary()
		return strconv.AppendQuote(dst, base64.StdEncoding.EncodeToString(data)), nil
	case bson.TypeTimestamp:
		t, _ := rv.Timestamp()
		return appendJSTime(dst, time.Unix(int64(t), 0)), nil
	case bson.TypeRegex:
		p, o := rv.Regex()
		return appendJSONString(dst, "/"+p+"/"+o), nil
	case bson.TypeSymbol:
		return appendJSONString(dst, rv.Symbol()), nil
	case bson.TypeJavaScript:
		return appendJSONString(dst, rv.JavaScript()), nil
	default: // null, undefined, min/max key, DBPointer, code with scope
		return append(dst, "null"...), nil
	}
}
