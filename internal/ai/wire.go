package ai

import (
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
)

// jsonBuf appends JSON text by hand, for the bodies sent on every call: byte for byte what the
// JSON v2 marshaller writes for the same values (wire_test.go holds it to that), without its
// reflection. The first error (a string that is not valid UTF-8) is kept.
type jsonBuf struct {
	b   []byte
	err error
}

func (j *jsonBuf) raw(s string) { j.b = append(j.b, s...) }

func (j *jsonBuf) str(s string) {
	var err error
	if j.b, err = jsontext.AppendQuote(j.b, s); err != nil && j.err == nil {
		j.err = err
	}
}

func (j *jsonBuf) int(n int64) { j.b = strconv.AppendInt(j.b, n, 10) }

// float writes f as JSON marshallers do (ECMAScript's number formatting): the shortest decimal
// that reads back as f, in exponent form below 1e-6 and from 1e21.
func (j *jsonBuf) float(f float64) {
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	j.b = strconv.AppendFloat(j.b, f, format, -1, 64)
	if format == 'e' { // e-07 → e-7
		if n := len(j.b); n >= 4 && j.b[n-4] == 'e' && j.b[n-3] == '-' && j.b[n-2] == '0' {
			j.b[n-2] = j.b[n-1]
			j.b = j.b[:n-1]
		}
	}
}

// messages writes [{"role":…,"content":…},…].
func (j *jsonBuf) messages(msgs []Message) {
	j.raw("[")
	for i, m := range msgs {
		if i > 0 {
			j.raw(",")
		}
		j.raw(`{"role":`)
		j.str(m.Role)
		j.raw(`,"content":`)
		j.str(m.Content)
		j.raw("}")
	}
	j.raw("]")
}

// AppendJSON appends c as JSON: byte for byte what encoding/json's Marshal writes for it
// (wire_test.go holds it to that), without its reflection. A nil dst is allocated to fit, with
// room for a final newline.
func (c *Completion) AppendJSON(dst []byte) ([]byte, error) {
	if dst == nil {
		dst = make([]byte, 0, 200+len(c.Text)+len(c.Model)+len(c.Provider)+len(c.RequestID))
	}
	j := jsonBuf{b: dst}
	j.raw(`{"text":`)
	j.htmlSafeStr(c.Text)
	j.raw(`,"usage":{"promptTokens":`)
	j.int(c.Usage.PromptTokens)
	j.raw(`,"completionTokens":`)
	j.int(c.Usage.CompletionTokens)
	j.raw(`,"totalTokens":`)
	j.int(c.Usage.TotalTokens)
	j.raw(`},"model":`)
	j.htmlSafeStr(c.Model)
	j.raw(`,"provider":`)
	j.htmlSafeStr(c.Provider)
	j.raw(`,"cost":`)
	if math.IsInf(c.Cost, 0) || math.IsNaN(c.Cost) {
		return dst, errors.New("ai: the cost is not a finite number")
	}
	j.float(c.Cost)
	j.raw(`,"requestId":`)
	j.htmlSafeStr(c.RequestID)
	j.raw("}")
	return j.b, nil
}

// htmlSafeStr writes s as encoding/json does: <, >, & and the JavaScript line separators
// escaped, and a string that is not valid UTF-8 by encoding/json itself.
func (j *jsonBuf) htmlSafeStr(s string) {
	start := len(j.b)
	b, err := jsontext.AppendQuote(j.b, s)
	if err != nil { // not valid UTF-8
		m, _ := json.Marshal(s) // a string always marshals
		j.b = append(b[:start], m...)
		return
	}
	j.b = b
	if !needsHTMLEscape(s) {
		return
	}
	quoted := string(j.b[start:])
	j.b = j.b[:start]
	for i := 0; i < len(quoted); i++ {
		switch {
		case quoted[i] == '<':
			j.raw(`\u003c`)
		case quoted[i] == '>':
			j.raw(`\u003e`)
		case quoted[i] == '&':
			j.raw(`\u0026`)
		case strings.HasPrefix(quoted[i:], "\u2028"):
			j.raw(`\u2028`)
			i += 2
		case strings.HasPrefix(quoted[i:], "\u2029"):
			j.raw(`\u2029`)
			i += 2
		default:
			j.b = append(j.b, quoted[i])
		}
	}
}

// needsHTMLEscape reports whether s holds <, >, &, U+2028 or U+2029.
func needsHTMLEscape(s string) bool {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '<', '>', '&':
			return true
		case 0xE2: // U+2028 and U+2029 are E2 80 A8 and E2 80 A9
			if i+2 < len(s) && s[i+1] == 0x80 && (s[i+2] == 0xA8 || s[i+2] == 0xA9) {
				return true
			}
		}
	}
	return false
}
