package mock

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
)

func statusOf(r *Response) int {
	if r.Status == 0 {
		return http.StatusOK
	}
	return r.Status
}

// responseHeader returns the default headers overlaid with the
// response's own.
func responseHeader(st *state, r *Response) http.Header {
	h := st.defHeader.Clone()
	if h == nil {
		h = http.Header{}
	}
	for k, v := range r.Headers {
		h.Set(k, v)
	}
	return h
}

// render turns a response into status, header and body bytes. A status that has no body
// (1xx, 204, 304) gets none, and no Content-Type.
func render(st *state, r *Response) (int, http.Header, []byte, error) {
	h := responseHeader(st, r)
	status := statusOf(r)
	if !bodyAllowed(status) {
		h.Del("Content-Type")
		return status, h, nil, nil
	}
	body, err := encodeBody(r, h.Get("Content-Type"))
	if err != nil {
		return 0, nil, nil, err
	}
	return status, h, body, nil
}

// bodyAllowed reports whether an answer of status may have a body (RFC 9110: not 1xx, 204
// or 304).
func bodyAllowed(status int) bool {
	return status >= 200 && status != http.StatusNoContent && status != http.StatusNotModified
}

// encodeBody returns the body bytes of a response whose Content-Type is
// ctype.
func encodeBody(r *Response, ctype string) ([]byte, error) {
	if r.Body != nil {
		return r.Body, nil
	}
	switch d := r.Data.(type) {
	case nil:
		return nil, nil
	case []byte:
		return d, nil
	case json.RawMessage:
		return d, nil
	case string:
		if strings.Contains(ctype, "json") {
			return json.Marshal(d)
		}
		return []byte(d), nil
	default:
		return json.Marshal(d)
	}
}

var statusLines sync.Map // int -> string

func statusLine(code int, text string) string {
	if text != "" {
		return strconv.Itoa(code) + " " + text
	}
	if s, ok := statusLines.Load(code); ok {
		return s.(string)
	}
	s := strconv.Itoa(code) + " " + http.StatusText(code)
	statusLines.Store(code, s)
	return s
}

type respBody struct{ bytes.Reader }

func (*respBody) Close() error { return nil }

func readBody(rc io.ReadCloser, n int64) ([]byte, error) {
	if rc == nil || rc == http.NoBody {
		return nil, nil
	}
	defer rc.Close()
	if n > 0 && n <= maxBody {
		b := make([]byte, n)
		_, err := io.ReadFull(rc, b)
		return b, err
	}
	return io.ReadAll(io.LimitReader(rc, maxBody))
}

// RoundTrip answers req from the mocks (the RoundTripper face). Unmatched
// requests go to the wrapped transport when FallbackToNetwork is on, and
// otherwise fail with an [*Error] of [CodeRouteMatchFailed] listing the
// closest routes. A handler or middleware failure is returned as an
// [*Error] too.
func (ic *Interceptor) RoundTrip(r *http.Request) (*http.Response, error) {
	ic.life.RLock()
	defer ic.life.RUnlock()
	st := ic.state.Load()
	var lk lookup
	ic.route(st, r.Method, r.URL, false, &lk)
	if lk.pass {
		return ic.transport.RoundTrip(r)
	}
	if lk.e == nil {
		rawURL := r.URL.String()
		ic.stats.recordUnmatched(r.Method, rawURL)
		if st.cfg.FallbackToNetwork {
			return ic.transport.RoundTrip(r)
		}
		if r.Body != nil {
			r.Body.Close()
		}
		return nil, ic.noMatch(st, r.Method, rawURL, lk.path)
	}
	b, err := readBody(r.Body, r.ContentLength)
	if err != nil {
		return nil, fmt.Errorf("mock: read request body: %w", err)
	}
	req := ic.newRequest(st, r.Method, r.URL.String(), r.URL, r.Header, b, &lk)
	resp, err := ic.execute(r.Context(), st, lk.e.handler, req)
	if err != nil {
		return nil, err
	}
	status, h, out, err := render(st, resp)
	if err != nil {
		return nil, &Error{Code: CodeHandlerExecution, Route: req.Route, Message: "encode response data", Err: err}
	}
	rb := &respBody{}
	rb.Reset(out)
	return &http.Response{
		Status:        statusLine(status, resp.StatusText),
		StatusCode:    status,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        h,
		Body:          rb,
		ContentLength: int64(len(out)),
		Request:       r,
	}, nil
}

// ServeHTTP answers r from the mocks (the Handler face). Unmatched and
// ignored requests are proxied to the target (see [WithTarget]) when
// FallbackToNetwork is on; otherwise an unmatched request gets a 404 JSON
// body naming ROUTE_MATCH_FAILED and the closest routes. A handler or
// middleware failure gets a 500 JSON body naming its code.
func (ic *Interceptor) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ic.life.RLock()
	defer ic.life.RUnlock()
	st := ic.state.Load()
	var lk lookup
	ic.route(st, r.Method, r.URL, true, &lk)
	if lk.pass || lk.e == nil {
		if !lk.pass {
			ic.stats.recordUnmatched(r.Method, r.URL.RequestURI())
		}
		if st.cfg.FallbackToNetwork && ic.fallback != nil {
			ic.fallback.ServeHTTP(w, r)
			return
		}
		e := ic.noMatch(st, r.Method, r.URL.RequestURI(), lk.path)
		if lk.pass {
			e.Message = fmt.Sprintf("%s %s is not intercepted (disabled, ignored or outside the base URL) and there is no fallback target", r.Method, r.URL.RequestURI())
		}
		writeError(w, http.StatusNotFound, e)
		return
	}
	b, err := readBody(r.Body, r.ContentLength)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"statusCode": 400, "error": "Bad Request", "message": "read body: " + err.Error()})
		return
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	req := ic.newRequest(st, r.Method, scheme+"://"+r.Host+r.URL.RequestURI(), r.URL, r.Header, b, &lk)
	req.RemoteAddr = r.RemoteAddr
	resp, err := ic.execute(r.Context(), st, lk.e.handler, req)
	if err != nil {
		var me *Error
		if errors.As(err, &me) {
			writeError(w, http.StatusInternalServerError, me)
		} else {
			writeError(w, http.StatusInternalServerError, &Error{Code: CodeHandlerExecution, Route: req.Route, Message: err.Error()})
		}
		return
	}
	status, h, out, err := render(st, resp)
	if err != nil {
		writeError(w, http.StatusInternalServerError, &Error{Code: CodeHandlerExecution, Route: req.Route, Message: "encode response data", Err: err})
		return
	}
	dst := w.Header()
	for k, v := range h {
		dst[k] = v
	}
	if bodyAllowed(status) {
		dst.Set("Content-Length", strconv.Itoa(len(out)))
	}
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		w.Write(out)
	}
}

// writeError writes an error as JSON: statusCode, error, code, message
// and, for unmatched requests, closest.
func writeError(w http.ResponseWriter, status int, e *Error) {
	body := map[string]any{
		"statusCode": status,
		"error":      http.StatusText(status),
		"code":       string(e.Code),
		"message":    e.Message,
	}
	if e.Err != nil {
		body["message"] = e.Message + ": " + e.Err.Error()
	}
	if e.Route != "" {
		body["route"] = e.Route
	}
	if e.Code == CodeRouteMatchFailed {
		closest := e.Closest
		if closest == nil {
			closest = []string{}
		}
		body["closest"] = closest
	}
	writeJSON(w, status, body)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	w.Write(b)
}

// log writes one record when logging is on and level passes the
// configured level.
func (ic *Interceptor) log(st *state, level slog.Level, msg string, args ...any) {
	if st == nil || !st.cfg.Logging.Enabled || level < st.cfg.Logging.Level {
		return
	}
	ic.logger.Log(context.Background(), level, "mock: "+msg, args...)
}
