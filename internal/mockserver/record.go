package mockserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/acme/app/mock"
)

// maxRecordBody is the largest upstream body the recorder keeps.
const maxRecordBody = 8 << 20

// recorder is the proxy's transport under --record: it forwards each request to the target
// and writes the exchange into a mock file (JSON when its name ends in .json, else YAML), one
// route per method and path, the latest answer winning. The file is valid input for --file:
// record once, replay offline. Routes keep the order they were first recorded in, and bodies
// the order of their keys; tokens in answers are redacted unless secrets is set.
type recorder struct {
	path    string
	target  *url.URL
	next    http.RoundTripper
	log     *slog.Logger
	secrets bool

	mu    sync.Mutex
	keys  []string              // route keys in the order first recorded
	mocks map[string]*yaml.Node // route key → response spec
}

func newRecorder(path string, target *url.URL, next http.RoundTripper, log *slog.Logger, secrets bool) (*recorder, error) {
	r := &recorder{path: path, target: target, next: next, log: log, secrets: secrets, mocks: map[string]*yaml.Node{}}
	// Checked at start, not at the first exchange, when a log line is easy to miss and the
	// exchanges are lost: the file is written beside itself (a temporary file renamed over it).
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return nil, fmt.Errorf("--record %s: is a directory", path)
	}
	probe, err := os.CreateTemp(filepath.Dir(path), ".record-*")
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, fmt.Errorf("--record %s: cannot write in %s: %w", path, filepath.Dir(path), err)
	}
	_ = probe.Close()
	_ = os.Remove(probe.Name())
	// Keep what an earlier run recorded into the same file, in its order.
	if b, err := os.ReadFile(path); err == nil && len(bytes.TrimSpace(b)) > 0 {
		var doc yaml.Node
		if err := yaml.Unmarshal(b, &doc); err != nil || len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
			return nil, fmt.Errorf("--record %s: the file exists and is not a mock file", path)
		}
		top := doc.Content[0]
		for i := 0; i+1 < len(top.Content); i += 2 {
			if top.Content[i].Value != "mocks" || top.Content[i+1].Kind != yaml.MappingNode {
				continue
			}
			m := top.Content[i+1]
			for j := 0; j+1 < len(m.Content); j += 2 {
				r.put(m.Content[j].Value, m.Content[j+1])
			}
		}
	}
	return r, nil
}

func (r *recorder) put(key string, spec *yaml.Node) {
	if _, ok := r.mocks[key]; !ok {
		r.keys = append(r.keys, key)
	}
	r.mocks[key] = spec
}

// skipHeaders are not recorded: hop-by-hop and computed headers, and the volatile ones a
// replay must not answer as fixed values (dates, request ids, rate-limit counters, cookies).
var skipHeaders = map[string]bool{
	"Date": true, "Content-Length": true, "Connection": true, "Keep-Alive": true, "Transfer-Encoding": true,
	"Content-Encoding": true, "Set-Cookie": true, "Access-Control-Allow-Origin": true,
	"Access-Control-Allow-Credentials": true, "Access-Control-Expose-Headers": true, "Vary": true,
	"Etag": true, "Last-Modified": true, "X-Request-Id": true, "Retry-After": true, "Age": true,
}

// skipHeader reports whether a response header (canonical name) is not recorded.
func skipHeader(k string) bool {
	return skipHeaders[k] || strings.HasPrefix(k, "X-Ratelimit-") || strings.HasPrefix(k, "Ratelimit")
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
	if err != nil {
		resp.Body.Close()
		return nil, err
	}
	if len(body) > maxRecordBody {
		// Too large to record: the client still gets the whole answer, the part read and
		// the rest as it comes.
		r.log.Warn("record: not recorded: the answer is over the recorder's limit", "path", req.URL.Path, "limit_bytes", maxRecordBody)
		resp.Body = struct {
			io.Reader
			io.Closer
		}{io.MultiReader(bytes.NewReader(body), resp.Body), resp.Body}
		return resp, nil
	}
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	resp.ContentLength = int64(len(body))
	resp.Header.Del("Content-Length")
	resp.Uncompressed = false
	r.record(req, resp, body)
	return resp, nil
}

func scalar(v string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Value: v} }

func quoted(v string) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: v, Style: yaml.DoubleQuotedStyle}
}

func (r *recorder) record(req *http.Request, resp *http.Response, body []byte) {
	if !utf8.Valid(body) {
		// A mock file holds text: an image or other bytes cannot be written into it.
		r.log.Warn("record: not recorded: the answer is not UTF-8 text", "path", req.URL.Path, "content_type", resp.Header.Get("Content-Type"))
		return
	}
	key, why := routeKey(req.Method, req.URL, r.target)
	if why != "" {
		r.log.Warn("record: not recorded: "+why, "route", key)
		return
	}
	spec := &yaml.Node{Kind: yaml.MappingNode}
	add := func(k string, v *yaml.Node) { spec.Content = append(spec.Content, scalar(k), v) }
	add("status", &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: strconv.Itoa(resp.StatusCode)})

	headers := &yaml.Node{Kind: yaml.MappingNode}
	templated := bytes.Contains(body, []byte("{{"))
	for _, k := range sortedKeys(resp.Header) {
		vs := resp.Header[k]
		if skipHeader(http.CanonicalHeaderKey(k)) || len(vs) == 0 {
			continue
		}
		v := vs[0]
		switch {
		case r.secrets:
		case secretHeaders[http.CanonicalHeaderKey(k)] || secretKey.MatchString(k):
			v = redacted
		default: // Location: …#access_token=…, Link: <…?access_token=…>, X-Debug: Bearer …
			v = redactString(v)
		}
		templated = templated || strings.Contains(v, "{{")
		headers.Content = append(headers.Content, scalar(k), quoted(v))
	}
	if len(headers.Content) > 0 {
		add("headers", headers)
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	// A body that parses as JSON is JSON, whatever it is declared as: its secrets are found
	// by key wherever the upstream's Content-Type says text, YAML or nothing.
	node, isJSON := parseJSONNode(body)
	switch {
	case len(body) == 0:
	case isJSON && strings.Contains(mt, "json"):
		// JSON is YAML: the node keeps the keys in the order the upstream sent them.
		blockStyle(node)
		if !r.secrets {
			redactNode(node, false)
		}
		add("data", node)
	default:
		s := string(body)
		if !r.secrets {
			s = redactBody(s, node, mt)
		}
		add("body", quoted(s))
	}
	if templated {
		add("templating", &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: "false"}) // replay the bytes as they came
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	prev, had := r.mocks[key]
	r.put(key, spec)
	if err := r.write(); err != nil {
		// Dropped again, so that one answer the file cannot hold does not fail every write
		// after it.
		if had {
			r.mocks[key] = prev
		} else {
			delete(r.mocks, key)
			r.keys = r.keys[:len(r.keys)-1]
		}
		r.log.Error("record: write failed", "file", r.path, "route", key, "err", err)
		return
	}
	r.log.Info("recorded", "route", key, "status", resp.StatusCode, "file", r.path)
}

// keyMatcher reads route keys as a recorded file is read: with the default matching.
var keyMatcher = mock.NewMatcher(mock.DefaultRouteMatchingConfig())

// routeKey is the route key that answers method and u again once recorded: the path as sent
// (escapes kept, as routes match them), less the target's own path. why says when there is
// none: a method a mock file does not take, or a path a route key would read as a pattern
// (":id", "*") and so answer other paths with.
func routeKey(method string, u, target *url.URL) (key, why string) {
	p := u.EscapedPath()
	if base := strings.TrimSuffix(target.EscapedPath(), "/"); base != "" {
		p = strings.TrimPrefix(p, base)
	}
	if p == "" {
		p = "/"
	}
	key = method + " " + p
	if v := mock.ValidateRoutePattern(key); !v.Valid {
		return key, "a route key cannot hold it: " + v.Errors[0].Message
	}
	if len(keyMatcher.ExtractParams(p, p)) > 0 {
		return key, "its path would read as a pattern (a parameter or a wildcard) and answer other paths"
	}
	return key, ""
}

func sortedKeys(h http.Header) []string {
	keys := make([]string, 0, len(h))
	for k := range h {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// blockStyle turns a node parsed from JSON (flow style) into block style, as a person would
// write the file.
func blockStyle(n *yaml.Node) {
	n.Style = 0 // scalars too: the encoder quotes a string that would read as another type

	for _, c := range n.Content {
		blockStyle(c)
	}
}

// redactBody redacts a body recorded as text: JSON (node, when it parsed) by its keys and
// written again only when something was redacted, YAML by its keys, anything else line by
// line (redactText).
func redactBody(s string, node *yaml.Node, mediaType string) string {
	if node != nil {
		if !redactNode(node, false) {
			return s
		}
		var buf bytes.Buffer
		if err := nodeJSON(&buf, node); err == nil {
			return buf.String()
		}
		return redactText(s)
	}
	if strings.Contains(mediaType, "yaml") {
		if out, ok := redactYAML([]byte(s)); ok {
			return out
		}
	}
	return redactText(s)
}

// write replaces the file atomically (a temporary file renamed over it).
func (r *recorder) write() error {
	mocks := &yaml.Node{Kind: yaml.MappingNode}
	for _, k := range r.keys {
		mocks.Content = append(mocks.Content, quoted(k), r.mocks[k])
	}
	doc := &yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{scalar("mocks"), mocks}}
	var out []byte
	var err error
	if strings.EqualFold(filepath.Ext(r.path), ".json") {
		var buf bytes.Buffer
		if err = nodeJSON(&buf, doc); err == nil {
			var ind bytes.Buffer
			if err = json.Indent(&ind, buf.Bytes(), "", "  "); err == nil {
				out = append(ind.Bytes(), '\n')
			}
		}
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

// nodeJSON writes a YAML node as JSON in its own key order: encoding/json writes every
// scalar (decoded to its Go type by the YAML library) and every key; this only walks the tree.
func nodeJSON(w *bytes.Buffer, n *yaml.Node) error {
	switch n.Kind {
	case yaml.MappingNode:
		w.WriteByte('{')
		for i := 0; i+1 < len(n.Content); i += 2 {
			if i > 0 {
				w.WriteByte(',')
			}
			k, err := json.Marshal(n.Content[i].Value)
			if err != nil {
				return err
			}
			w.Write(k)
			w.WriteByte(':')
			if err := nodeJSON(w, n.Content[i+1]); err != nil {
				return err
			}
		}
		w.WriteByte('}')
	case yaml.SequenceNode:
		w.WriteByte('[')
		for i, c := range n.Content {
			if i > 0 {
				w.WriteByte(',')
			}
			if err := nodeJSON(w, c); err != nil {
				return err
			}
		}
		w.WriteByte(']')
	case yaml.AliasNode:
		return nodeJSON(w, n.Alias)
	default:
		if (n.Tag == "!!int" || n.Tag == "!!float") && isJSONNumber(n.Value) {
			w.WriteString(n.Value) // as written: 1.50 stays 1.50, a 20-digit id keeps its digits
			return nil
		}
		var v any
		if err := n.Decode(&v); err != nil {
			return err
		}
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		w.Write(b)
	}
	return nil
}

// isJSONNumber reports whether s is a number as JSON writes one.
func isJSONNumber(s string) bool {
	return s != "" && (s[0] == '-' || (s[0] >= '0' && s[0] <= '9')) && json.Valid([]byte(s))
}
