package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"sort"
	"strconv"
	"unicode/utf8"

	"github.com/acme/app/internal/apperr"
	"github.com/acme/app/internal/memlimit"
)

// envelope is the body of every non-2xx answer of /api, and of requests no route matched
// (envelopeFormat).
type envelope struct {
	StatusCode int    `json:"statusCode"`
	Message    any    `json:"message"` // string, or []string for validation failures
	Error      string `json:"error"`
}

// statusOf is the one table from error kinds to HTTP statuses.
var statusOf = map[apperr.Kind]int{
	apperr.Internal:        http.StatusInternalServerError,
	apperr.Invalid:         http.StatusBadRequest,
	apperr.Unauthorized:    http.StatusUnauthorized,
	apperr.Forbidden:       http.StatusForbidden,
	apperr.NotFound:        http.StatusNotFound,
	apperr.Conflict:        http.StatusConflict,
	apperr.TooLarge:        http.StatusRequestEntityTooLarge,
	apperr.RateLimited:     http.StatusTooManyRequests,
	apperr.Unavailable:     http.StatusServiceUnavailable,
	apperr.Upstream:        http.StatusBadGateway,
	apperr.UpstreamTimeout: http.StatusGatewayTimeout,
	apperr.PaymentRequired: http.StatusPaymentRequired,
}

// StatusOf returns the HTTP status for err's kind.
func StatusOf(err error) int { return statusOf[apperr.KindOf(err)] }

var jsonContentType = []string{"application/json; charset=utf-8"}

// encode writes v as JSON with the given status and its Content-Length, which lets observe send
// the answer before it logs it. A value that cannot be encoded is answered 500 without a log
// line: handlers answering what they read from a database use respond, which logs why.
func encode(w http.ResponseWriter, status int, v any) {
	buf, err := json.Marshal(v)
	if err != nil {
		writeEnvelope(w, http.StatusInternalServerError, "Internal server error")
		return
	}
	writeJSON(w, status, buf)
}

// respond writes v as encode does; when v cannot be encoded it answers 500 in the route's
// format and logs why, with the request (the client sees only "Internal server error").
func respond(w http.ResponseWriter, r *http.Request, status int, v any) {
	buf, err := json.Marshal(v)
	if err != nil {
		writeError(w, r, fmt.Errorf("encode the answer (%T): %w", v, err))
		return
	}
	writeJSON(w, status, buf)
}

// writeJSON writes buf, one JSON value, with the given status and its Content-Length.
func writeJSON(w http.ResponseWriter, status int, buf []byte) {
	h := w.Header()
	h["Content-Type"] = jsonContentType
	h["Content-Length"] = []string{strconv.Itoa(len(buf) + 1)}
	w.WriteHeader(status)
	_, _ = w.Write(append(buf, '\n'))
}

// writeEnvelope writes the error envelope with status and message (a string or []string).
func writeEnvelope(w http.ResponseWriter, status int, message any) {
	encode(w, status, envelope{StatusCode: status, Message: message, Error: reasonOf(status)})
}

// reasonOf is the envelope's error for status.
func reasonOf(status int) string {
	if status == http.StatusTooManyRequests {
		return "ThrottlerException"
	}
	if reason := http.StatusText(status); reason != "" {
		return reason
	}
	return "Error"
}

// decodeFields reads the JSON request body into a map of raw fields, so that services can validate
// each field's type with class-validator's wording. It enforces the body limit (413), a JSON
// content type (415), one well-formed JSON object (400) and nothing after it.
func decodeFields(w http.ResponseWriter, r *http.Request) (map[string]json.RawMessage, error) {
	raw, err := readJSON(w, r)
	if err != nil {
		return nil, err
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil || fields == nil {
		return nil, apperr.E(apperr.Invalid, "request body must be a JSON object")
	}
	return fields, nil
}

// readJSON returns the body after the checks of decodeFields, as bytes holding one JSON value.
func readJSON(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	body, err := readJSONBody(w, r)
	if err != nil {
		return nil, err
	}
	if err := checkSyntax(body); err != nil {
		return nil, err
	}
	return body, nil
}

// readJSONBody returns the body, trimmed ("{}" when empty), after the content type and size
// checks of decodeFields but before its syntax check.
func readJSONBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	if ct := r.Header.Get("Content-Type"); ct != "" && ct != "application/json" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || (mt != "application/json" && !(len(mt) > 5 && mt[len(mt)-5:] == "+json")) {
			return nil, apperr.E(apperr.Invalid, "Content-Type must be application/json")
		}
	}
	body, err := readBody(w, r, maxBodyFrom(r.Context()))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return nil, apperr.E(apperr.TooLarge, "request entity too large")
		}
		if errors.Is(err, memlimit.ErrFull) {
			return nil, memlimit.Refusal(err)
		}
		return nil, apperr.Wrap(apperr.Invalid, err, "could not read the request body")
	}
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 {
		return []byte("{}"), nil
	}
	if !utf8.Valid(trimmed) {
		return nil, invalidUTF8(trimmed)
	}
	return trimmed, nil
}

// invalidUTF8 words the answer to a body that is not valid UTF-8: the top-level fields whose
// value holds invalid bytes, as class-validator words a field failure, or the body as a whole.
// (The JSON decoders would silently replace such bytes with U+FFFD.)
func invalidUTF8(body []byte) error {
	var fields map[string]json.RawMessage
	if json.Unmarshal(body, &fields) == nil {
		var msgs []string
		for name, raw := range fields {
			if !utf8.Valid(raw) {
				msgs = append(msgs, name+" must be valid UTF-8")
			}
		}
		if len(msgs) > 0 {
			sort.Strings(msgs)
			return apperr.Validation(msgs...)
		}
	}
	return apperr.Validation("request body must be valid UTF-8")
}

// checkSyntax answers a body that is not exactly one JSON value. json.Valid accepts exactly one
// JSON value and nothing after it, without allocating; the decoder runs only to word the error
// of a bad body.
func checkSyntax(body []byte) error {
	if json.Valid(body) {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	var v json.RawMessage
	if err := dec.Decode(&v); err != nil {
		return apperr.E(apperr.Invalid, "Unexpected token in JSON: "+jsonErrorText(err))
	}
	return apperr.E(apperr.Invalid, "Unexpected data after the JSON body")
}

// readBody reads the body up to limit bytes (past it: *http.MaxBytesError), into a buffer
// sized from Content-Length when the client sent one.
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	if r.ContentLength > limit {
		// Refused as declared, before a byte is read: net/http then sends no 100 Continue,
		// and the client uploads nothing.
		return nil, &http.MaxBytesError{Limit: limit}
	}
	ri := infoFrom(r.Context())
	if ri == nil {
		ri = &requestInfo{} // outside observe: no bound
	}
	rd := http.MaxBytesReader(w, r.Body, limit)
	if n := r.ContentLength; n > 0 && n <= limit {
		// The declared length is taken from the bound on buffered bytes before a byte is
		// read, and given back when the request ends (observe).
		if !ri.mem.Take(n) {
			return nil, memlimit.ErrFull
		}
		ri.held += n
		buf := make([]byte, n, n+1)
		if _, err := io.ReadFull(rd, buf); err != nil {
			return nil, err
		}
		// A body longer than its Content-Length is the server's to reject; nothing more is read.
		return buf, nil
	}
	counted := memlimit.NewReader(ri.mem, rd)
	body, err := io.ReadAll(counted)
	ri.held += counted.Held()
	return body, err
}

func jsonErrorText(err error) string {
	var syn *json.SyntaxError
	if errors.As(err, &syn) {
		return syn.Error() + " at offset " + strconv.FormatInt(syn.Offset, 10)
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return "unexpected end of JSON input"
	}
	return err.Error()
}

// decodeInto reads the JSON body into v (a struct or map) after the checks of decodeFields.
//
// The decoder refuses what is not one JSON value (a type that decodes itself, a json.Unmarshaler,
// must too): the syntax is checked apart only when decoding fails, to word the answer, so a
// well-formed body is scanned once, not twice.
func decodeInto(w http.ResponseWriter, r *http.Request, v any) error {
	raw, err := readJSONBody(w, r)
	if err != nil {
		return err
	}
	if u, ok := v.(json.Unmarshaler); ok {
		err = u.UnmarshalJSON(raw)
	} else {
		err = json.Unmarshal(raw, v)
	}
	if err != nil {
		if serr := checkSyntax(raw); serr != nil {
			return serr
		}
		return apperr.Wrap(apperr.Invalid, err, "request body does not have the expected shape")
	}
	return nil
}
