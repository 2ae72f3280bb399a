// Package console serves the web console: the static files of assets/, embedded in the
// binary, at /console. The page talks to the API of the same origin only; every answer
// carries a Content-Security-Policy that allows scripts, styles and requests from this origin
// and nothing inline. Files are sent gzip-compressed to clients that accept it (compressed
// once, on first use) and revalidated by ETag.
package console

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strconv"
	"strings"
	"sync"
)

//go:embed assets
var assets embed.FS

// Prefix is the path the console is served at.
const Prefix = "/console"

// CSP is the Content-Security-Policy of every answer: this origin only, no inline script or
// style, no plugins, not framed.
const CSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
	"font-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// file is one asset, ready to send. Its plain and gzip forms are different representations,
// so each has its own entity tag (RFC 9110, 8.8.3).
type file struct {
	body, gzipped  []byte
	ctype          string
	etag, gzipETag string
}

// Handler serves GET /console (the page) and GET /console/<file>.
type Handler struct {
	once     sync.Once
	files    map[string]*file
	err      error
	notFound http.Handler
}

// SetNotFound sets the answer for a path under /console/ that names no file (default
// net/http's plain-text 404). Call it before serving.
func (h *Handler) SetNotFound(nf http.Handler) { h.notFound = nf }

// New returns the console's handler.
func New() *Handler { return &Handler{} }

// load reads and compresses every asset once.
func (h *Handler) load() {
	h.files = map[string]*file{}
	h.err = fs.WalkDir(assets, "assets", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		body, err := assets.ReadFile(p)
		if err != nil {
			return err
		}
		var buf bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
		if _, err := zw.Write(body); err != nil {
			return err
		}
		if err := zw.Close(); err != nil {
			return err
		}
		sum := sha256.Sum256(body)
		ctype := mime.TypeByExtension(path.Ext(p))
		if ctype == "" {
			ctype = "application/octet-stream"
		}
		tag := hex.EncodeToString(sum[:12])
		f := &file{body: body, ctype: ctype, etag: `"` + tag + `"`}
		if buf.Len() < len(body) {
			f.gzipped, f.gzipETag = buf.Bytes(), `"`+tag+`-gzip"`
		}
		h.files[strings.TrimPrefix(p, "assets/")] = f
		return nil
	})
}

// ServeHTTP answers the page at /console and /console/, a file at /console/<name>, and 404
// for anything else under /console/.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.once.Do(h.load)
	hdr := w.Header()
	hdr.Set("Content-Security-Policy", CSP)
	hdr.Set("X-Content-Type-Options", "nosniff")
	hdr.Set("Referrer-Policy", "no-referrer")
	if h.err != nil {
		http.Error(w, "the console's files could not be read", http.StatusInternalServerError)
		return
	}
	name := strings.TrimPrefix(strings.TrimPrefix(r.URL.Path, Prefix), "/")
	if name == "" {
		name = "index.html"
	}
	f, ok := h.files[name]
	if !ok {
		if h.notFound != nil {
			h.notFound.ServeHTTP(w, r)
		} else {
			http.NotFound(w, r)
		}
		return
	}
	body, etag := f.body, f.etag
	gzipped := f.gzipped != nil && acceptsGzip(r.Header.Get("Accept-Encoding"))
	if gzipped {
		body, etag = f.gzipped, f.gzipETag
	}
	hdr.Set("Content-Type", f.ctype)
	hdr.Set("Cache-Control", "no-cache") // revalidated by ETag: a new binary serves new files at once
	hdr.Set("ETag", etag)
	hdr.Add("Vary", "Accept-Encoding")
	if noneMatch(r.Header.Values("If-None-Match"), etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	if gzipped {
		hdr.Set("Content-Encoding", "gzip")
	}
	hdr.Set("Content-Length", strconv.Itoa(len(body)))
	if r.Method == http.MethodHead {
		return
	}
	_, _ = w.Write(body)
}

// noneMatch reports whether If-None-Match fields name etag (compared weakly, as RFC 9110
// 13.1.2 has it) or are "*".
func noneMatch(fields []string, etag string) bool {
	for _, field := range fields {
		for _, tag := range strings.Split(field, ",") {
			tag = strings.TrimSpace(tag)
			if tag == "*" || strings.TrimPrefix(tag, "W/") == etag {
				return true
			}
		}
	}
	return false
}

// acceptsGzip reports whether an Accept-Encoding header accepts gzip (not with q=0).
func acceptsGzip(header string) bool {
	for _, part := range strings.Split(header, ",") {
		name, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if strings.EqualFold(strings.TrimSpace(name), "gzip") || strings.TrimSpace(name) == "*" {
			q := strings.ReplaceAll(strings.TrimSpace(params), " ", "")
			return q != "q=0" && q != "q=0.0" && q != "q=0.00" && q != "q=0.000"
		}
	}
	return false
}
