package mock

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// newRequest builds the handler's view of a matched request.
func (ic *Interceptor) newRequest(st *state, method, rawURL string, u *url.URL, h http.Header, body []byte, lk *lookup) *Request {
	req := &Request{
		Method:    method,
		URL:       rawURL,
		Path:      lk.path,
		Route:     lk.e.key,
		Params:    params(lk.e.segs, lk.segs),
		Header:    h,
		RawBody:   body,
		Timestamp: ic.now(),
	}
	if u.RawQuery != "" {
		req.Query, _ = url.ParseQuery(u.RawQuery)
	}
	var idb [24]byte
	req.RequestID = string(strconv.AppendUint(append(idb[:0], "req-"...), ic.seq.Add(1), 10))
	if len(body) > 0 {
		req.Body = parseBody(h.Get("Content-Type"), body)
	}
	return req
}

func parseBody(ctype string, body []byte) any {
	trimmed := bytes.TrimSpace(body)
	if strings.Contains(ctype, "json") || (ctype == "" && len(trimmed) > 0 && (trimmed[0] == '{' || trimmed[0] == '[')) {
		var v any
		if json.Unmarshal(body, &v) == nil {
			return v
		}
	}
	return string(body)
}

// execute runs middleware, cache, handler and delay for a matched request.
func (ic *Interceptor) execute(ctx context.Context, st *state, h Handler, req *Request) (resp *Response, err error) {
	start := ic.now()
	defer func() {
		ic.stats.record(req.Route, req.Method, ic.now().Sub(start))
	}()
	logc := st.cfg.Logging
	if logc.Enabled && logc.LogRequests {
		ic.log(st, slog.LevelInfo, "mock request", "id", req.RequestID, "method", req.Method, "url", req.URL, "route", req.Route)
	}
	if logc.Enabled && logc.LogRouteMatching {
		ic.log(st, slog.LevelDebug, "route matched", "id", req.RequestID, "route", req.Route, "params", req.Params)
	}
	resp, err = ic.run(ctx, st, h, req)
	if err != nil {
		resp, err = ic.recover(ctx, st, req, err)
		if err != nil {
			if logc.Enabled {
				ic.log(st, slog.LevelError, "mock request failed", "id", req.RequestID, "route", req.Route, "err", err)
			}
			return nil, err
		}
	}
	for _, mw := range st.chain {
		if mw.OnResponse == nil {
			continue
		}
		mw := mw
		r := resp
		out, herr := callHook(func() (*Response, error) { return mw.OnResponse(ctx, r, req) })
		if herr != nil {
			return ic.recover(ctx, st, req, reqError(CodeMiddleware, req, fmt.Sprintf("middleware %q OnResponse failed", mw.Name), herr))
		}
		if out != nil {
			resp = out
		}
	}
	d := resp.Delay
	if d <= 0 && !st.cfg.Delay.IsZero() {
		d = st.cfg.Delay.Pick()
	}
	if err := sleep(ctx, d); err != nil {
		return nil, err
	}
	if logc.Enabled && logc.LogResponses {
		ic.log(st, slog.LevelInfo, "mock response", "id", req.RequestID, "route", req.Route, "status", statusOf(resp))
	}
	return resp, nil
}

// run executes OnRequest hooks, the cache and the handler.
func (ic *Interceptor) run(ctx context.Context, st *state, h Handler, req *Request) (*Response, error) {
	for _, mw := range st.chain {
		if mw.OnRequest == nil {
			continue
		}
		mw := mw
		resp, err := callHook(func() (*Response, error) { return mw.OnRequest(ctx, req) })
		if err != nil {
			return nil, reqError(CodeMiddleware, req, fmt.Sprintf("middleware %q OnRequest failed", mw.Name), err)
		}
		if resp != nil {
			return resp, nil
		}
	}
	var key string
	c := st.cache
	var rc RouteCache
	if c != nil {
		rc = st.cfg.Cache.Routes[req.Route]
		if rc.Off || !st.cfg.Cache.methodCached(req.Method) {
			c = nil
		}
	}
	if c != nil {
		key = cacheKey(st.m, req, rc.Digest)
		if resp, ok := c.get(key, ic.now()); ok {
			ic.stats.recordCache(true)
			return resp, nil
		}
		ic.stats.recordCache(false)
	}
	resp, err := callHandler(ctx, h, req)
	if err != nil {
		return nil, err
	}
	if c != nil && st.cfg.Cache.statusCached(statusOf(resp)) {
		// Encode the body once, as render would, and answer the bytes that
		// are stored, so that a hit answers exactly what the miss did.
		b, err := encodeBody(resp, responseHeader(st, resp).Get("Content-Type"))
		if err == nil {
			r := *resp
			r.Body = b
			resp = &r
			err = c.put(key, resp, ic.now())
		}
		if err != nil {
			ic.log(st, slog.LevelError, "cache store failed", "route", req.Route,
				"err", &Error{Code: CodePersistence, Route: req.Route, Message: "store response", Err: err})
		}
	}
	return resp, nil
}

// callHandler runs the handler, turning errors and panics into
// HANDLER_EXECUTION_ERROR.
func callHandler(ctx context.Context, h Handler, req *Request) (resp *Response, err error) {
	defer func() {
		if p := recover(); p != nil {
			resp, err = nil, reqError(CodeHandlerExecution, req, fmt.Sprintf("handler for %q panicked", req.Route), fmt.Errorf("panic: %v", p))
		}
	}()
	resp, err = h(ctx, req)
	if err != nil {
		if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
			return nil, err
		}
		return nil, reqError(CodeHandlerExecution, req, fmt.Sprintf("handler for %q failed", req.Route), err)
	}
	if resp == nil {
		return nil, reqError(CodeHandlerExecution, req, fmt.Sprintf("handler for %q returned no response", req.Route), nil)
	}
	return resp, nil
}

// recover lets OnError hooks answer a failure.
func (ic *Interceptor) recover(ctx context.Context, st *state, req *Request, cause error) (*Response, error) {
	for _, mw := range st.chain {
		if mw.OnError == nil {
			continue
		}
		mw := mw
		resp, err := callHook(func() (*Response, error) { return mw.OnError(ctx, cause, req) })
		if err != nil {
			return nil, reqError(CodeMiddleware, req, fmt.Sprintf("middleware %q OnError failed", mw.Name), err)
		}
		if resp != nil {
			return resp, nil
		}
	}
	return nil, cause
}

// cacheKey is the route, its definition's digest, the method, the normalised URL and a hash
// of the body: an answer is reused only for the same request to the same definition.
func cacheKey(m *Matcher, req *Request, digest string) string {
	sum := sha256.Sum256(req.RawBody)
	return req.Route + cacheKeySep + digest + cacheKeySep + req.Method + " " + m.NormalizeURL(req.URL) + " " + hex.EncodeToString(sum[:8])
}
