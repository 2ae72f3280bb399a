package wiremock

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/net/http/httpguts"
)

func (m *mp) response(rs map[string]any, st *stub) {
	r := &answer{status: http.StatusOK, header: http.Header{}}
	bodies := 0
	for k, v := range rs {
		field := "response." + k
		switch k {
		case "status":
			n, ok := intOf(v)
			if !ok || n < 100 || n > 599 {
				m.bad(field, "must be an HTTP status (100-599)")
				continue
			}
			r.status = n
		case "statusMessage":
			s, ok := v.(string)
			if !ok || strings.ContainsAny(s, "\r\n") {
				m.bad(field, "must be a one-line string")
				continue
			}
			r.message = s
		case "headers":
			obj, ok := v.(map[string]any)
			if !ok {
				m.bad(field, "must be an object")
				continue
			}
			for name, hv := range obj {
				if !httpguts.ValidHeaderFieldName(name) {
					// The HTTP server would drop it without a word.
					m.bad(field+"."+name, "%q is not a valid HTTP header name (letters, digits and !#$%%&'*+-.^_`|~, no spaces or colons)", name)
					continue
				}
				var values []string
				switch x := hv.(type) {
				case string:
					values = []string{x}
				case []any:
					for _, e := range x {
						s, ok := e.(string)
						if !ok {
							m.bad(field+"."+name, "must be a string or an array of strings")
							break
						}
						values = append(values, s)
					}
				default:
					m.bad(field+"."+name, "must be a string or an array of strings")
				}
				for _, v := range values {
					if strings.ContainsAny(v, "\r\n\x00") {
						// The HTTP server would make the line break a space.
						m.bad(field+"."+name, "the value holds a line break or NUL, which HTTP does not allow in a header")
						break
					}
					r.header.Add(name, v)
				}
			}
		case "body":
			bodies++
			s, ok := v.(string)
			if !ok {
				m.bad(field, "must be a string (use jsonBody for JSON)")
				continue
			}
			r.body = []byte(s)
		case "jsonBody":
			bodies++
			// Written as the mapping has it, keys in its order (as WireMock answers), not
			// re-encoded from a map, which would sort them.
			var buf bytes.Buffer
			if err := json.Compact(&buf, m.jsonBody); err != nil || len(m.jsonBody) == 0 {
				b, err := json.Marshal(v)
				if err != nil {
					m.bad(field, "%v", err)
					continue
				}
				buf.Reset()
				buf.Write(b)
			}
			r.body, r.json = buf.Bytes(), true
		case "base64Body":
			bodies++
			s, _ := v.(string)
			b, err := base64.StdEncoding.DecodeString(s)
			if err != nil {
				m.bad(field, "is not base64: %v", err)
				continue
			}
			r.body = b
		case "bodyFileName":
			bodies++
			s, ok := v.(string)
			if !ok || s == "" {
				m.bad(field, "must be a file name under __files")
				continue
			}
			b, err := m.bodyFile(s)
			if err != nil {
				m.bad(field, "%v", err)
				continue
			}
			r.body = b
		case "fixedDelayMilliseconds":
			n, ok := floatOf(v)
			if !ok {
				m.bad(field, "must be a non-negative number")
				continue
			}
			r.delay = delay{kind: "fixed", a: ms(n)}
		case "delayDistribution":
			m.delayDistribution(field, v, r)
		case "fault":
			s, _ := v.(string)
			switch s {
			case "EMPTY_RESPONSE", "MALFORMED_RESPONSE_CHUNK", "RANDOM_DATA_THEN_CLOSE", "CONNECTION_RESET_BY_PEER":
				r.fault = s
			default:
				m.bad(field, "unknown fault %q", s)
			}
		default:
			m.unsupported(field)
		}
	}
	if bodies > 1 {
		m.bad("response", "body, jsonBody, base64Body and bodyFileName exclude each other")
	}
	if r.json && r.header.Get("Content-Type") == "" {
		r.header.Set("Content-Type", "application/json")
	}
	r.header.Set("Content-Length", strconv.Itoa(len(r.body)))
	for k, v := range r.header {
		r.header[k] = slices.Clip(v) // shared by every answer: an Add downstream must copy
	}
	st.answer = r
}

func ms(n float64) time.Duration { return time.Duration(n * float64(time.Millisecond)) }

func (m *mp) delayDistribution(field string, v any, r *answer) {
	obj, ok := v.(map[string]any)
	if !ok {
		m.bad(field, "must be an object")
		return
	}
	kind, _ := obj["type"].(string)
	num := func(k string, required bool) float64 {
		val, has := obj[k]
		if !has {
			if required {
				m.bad(field+"."+k, "missing")
			}
			return 0
		}
		f, ok := floatOf(val)
		if !ok {
			m.bad(field+"."+k, "must be a non-negative number")
		}
		return f
	}
	for k := range obj {
		known := map[string][]string{"uniform": {"type", "lower", "upper"}, "lognormal": {"type", "median", "sigma", "maxValue"}}[kind]
		if known != nil && !slices.Contains(known, k) {
			m.unsupported(field + "." + k)
		}
	}
	switch kind {
	case "uniform":
		lo, hi := num("lower", true), num("upper", true)
		if hi < lo {
			m.bad(field, "upper is below lower")
		}
		r.delay = delay{kind: kind, a: ms(lo), b: ms(hi)}
	case "lognormal":
		r.delay = delay{kind: kind, a: ms(num("median", true)), sigma: num("sigma", true), b: ms(num("maxValue", false))}
	default:
		m.bad(field+".type", "%q: only uniform and lognormal are supported", kind)
	}
}

// bodyFile reads name under __files; a name that leaves __files is refused.
func (m *mp) bodyFile(name string) ([]byte, error) {
	clean := path.Clean("/" + filepath.ToSlash(name))
	if strings.Contains(name, "\x00") || clean == "/" || filepath.IsAbs(name) || strings.HasPrefix(path.Clean(filepath.ToSlash(name)), "../") {
		return nil, fmt.Errorf("%q is outside __files", name)
	}
	full := filepath.Join(m.l.files, filepath.FromSlash(clean))
	real, err := filepath.EvalSymlinks(full)
	if err != nil {
		return nil, fmt.Errorf("%q: %w", name, errors.Unwrap(err))
	}
	// The base is the mappings' directory resolved, then __files as it is: a __files that is
	// a link to elsewhere (a cloned repository's) must not make elsewhere servable.
	dir, err := filepath.EvalSymlinks(m.l.dir)
	if err != nil {
		return nil, err
	}
	base := filepath.Join(dir, "__files")
	if rel, err := filepath.Rel(base, real); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return nil, fmt.Errorf("%q leads outside __files", name)
	}
	return readBounded(real, maxMappingFile)
}
