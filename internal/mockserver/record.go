package mockserver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"
)

// maxRecordBody is the largest upstream body the recorder keeps.
const maxRecordBody = 8 << 20

// recorder is the proxy's transport under --record: it forwards each request to the target
// and writes the exchange into a mock file (JSON when its name ends in .json, else YAML), one
// route per method and path, the latest answer winning. The file is valid input for --file:
// record once, replay offline.
type recorder struct {
	path   string
	target *url.URL
	next   http.RoundTripper
	log    *slog.Logger

	mu    sync.Mutex
	mocks map[string]any // route key → response spec
}

func newRecorder(path string, target *url.URL, next http.RoundTripper, log *slog.Logger) (*recorder, error) {
	r := &recorder{path: path, target: target, next: next, log: log, mocks: map[string]any{}}
	// Keep what an earlier run recorded into the same file.
	if b, err := os.ReadFile(path); err == nil && len(bytes.TrimSpace(b)) > 0 {
		var f struct {
			Mocks map[string]any `yaml:"mocks"`
		}
		if err := yaml.Unmarshal(b, &f); err != nil {
			return nil, fmt.Errorf("--record %s: the file exists and is not a mock file: %w", path, err)
		}
		for k, v := range f.Mocks {
			r.mocks[k] = jsonable(v)
		}
	}
	return r, nil
}

// skipHeaders are not recorded: hop-by-hop, computed or per-exchange headers.
var skipHeaders = map[string]bool{
	"Date": true, "Content-Length": true, "Connection": true, "Keep-Alive": true, "Transfer-Encoding": true,
	"Content-Encoding": true, "Set-Cookie": true, "Access-Control-Allow-Origin": true,
	"Access-Control-Allow-Credentials": true, "Vary": true, "Etag": true, "Last-Modified": true,
}

// RoundTrip forwards req and records the answer.
func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Header.Del("Accept-Encoding") // record plain bodies; the transport decodes gzip itself
	resp, err := r.next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxRecordBody+1))
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	resp.ContentLength = int64(len(body))
	resp.Header.Del("Content-Length")
	resp.Uncompressed = false
	if len(body) <= maxRecordBody {
		r.record(req, resp, body)
	}
	return resp, nil
}

func (r *recorder) record(req *http.Request, resp *http.Response, body []byte) {
	p := req.URL.Path
	if base := strings.TrimSuffix(r.target.Path, "/"); base != "" {
		p = strings.TrimPrefix(p, base)
	}
	if p == "" {
		p = "/"
	}
	key := req.Method + " " + p
	spec := map[string]any{"status": resp.StatusCode}
	headers := map[string]string{}
	for k, vs := range resp.Header {
		if !skipHeaders[http.CanonicalHeaderKey(k)] && len(vs) > 0 {
			headers[k] = vs[0]
		}
	}
	if len(headers) > 0 {
		spec["headers"] = headers
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	var data any
	switch {
	case len(body) == 0:
	case strings.Contains(mt, "json") && json.Unmarshal(body, &data) == nil:
		spec["data"] = data
	default:
		spec["body"] = string(body)
	}
	if bytes.Contains(body, []byte("{{")) || headersHaveTemplate(headers) {
		spec["templating"] = false // replay the bytes as they came
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.mocks[key] = spec
	if err := r.write(); err != nil {
		r.log.Error("record: write failed", "file", r.path, "err", err)
		return
	}
	r.log.Info("recorded", "route", key, "status", resp.StatusCode, "file", r.path)
}

func headersHaveTemplate(h map[string]string) bool {
	for _, v := range h {
		if hasTemplate(v) {
			return true
		}
	}
	return false
}

// write replaces the file atomically (a temporary file renamed over it).
func (r *recorder) write() error {
	var out []byte
	var err error
	doc := map[string]any{"mocks": r.mocks}
	if strings.EqualFold(filepath.Ext(r.path), ".json") {
		out, err = json.MarshalIndent(doc, "", "  ")
		out = append(out, '\n')
	} else {
		out, err = yaml.Marshal(doc)
	}
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(r.path), ".record-*")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(out); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), r.path)
}
