package console

import (
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

func get(t *testing.T, url string, header map[string]string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	tr := &http.Transport{DisableCompression: true}
	res, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res, body
}

// Ensure the page and each file it references are served with their type and the CSP, gzip
// to a client that accepts it, 304 for a current ETag, 404 for an unknown file.
func TestHandler(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(New())
	defer srv.Close()

	res, page := get(t, srv.URL+"/console", nil)
	if res.StatusCode != 200 || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("page: %d %s", res.StatusCode, res.Header.Get("Content-Type"))
	}
	if csp := res.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe-inline") {
		t.Fatalf("CSP %q", csp)
	}
	if regexp.MustCompile(`<script(?:\s[^>]*)?>\s*[^<\s]`).Match(page) || strings.Contains(string(page), "style=") {
		t.Fatal("the page has inline script or style")
	}
	refs := regexp.MustCompile(`(?:src|href)="([^"]+)"`).FindAllSubmatch(page, -1)
	if len(refs) < 3 {
		t.Fatalf("the page references %d files", len(refs))
	}
	for _, m := range refs {
		ref := string(m[1])
		t.Run(ref, func(t *testing.T) {
			if !strings.HasPrefix(ref, Prefix+"/") {
				t.Fatalf("%s is not a file of the console (same origin, under %s/)", ref, Prefix)
			}
			res, plain := get(t, srv.URL+ref, nil)
			if res.StatusCode != 200 || res.Header.Get("Content-Encoding") != "" || res.Header.Get("Content-Security-Policy") == "" {
				t.Fatalf("%d %v", res.StatusCode, res.Header)
			}
			res, zipped := get(t, srv.URL+ref, map[string]string{"Accept-Encoding": "br, gzip"})
			if res.Header.Get("Content-Encoding") == "gzip" {
				zr, err := gzip.NewReader(strings.NewReader(string(zipped)))
				if err != nil {
					t.Fatal(err)
				}
				unzipped, _ := io.ReadAll(zr)
				if string(unzipped) != string(plain) {
					t.Fatal("the gzip answer is not the file")
				}
			} else if len(plain) > 1024 {
				t.Fatalf("a %d-byte file was not compressed", len(plain))
			}
			res, _ = get(t, srv.URL+ref, map[string]string{"If-None-Match": res.Header.Get("ETag"), "Accept-Encoding": "br, gzip"})
			if res.StatusCode != http.StatusNotModified {
				t.Fatalf("revalidation: %d", res.StatusCode)
			}
		})
	}
	for _, tc := range []struct {
		path   string
		status int
		ctype  string
	}{
		{"/console/", 200, "text/html"},
		{"/console/app.js", 200, "javascript"},
		{"/console/app.css", 200, "text/css"},
		{"/console/nope.js", 404, ""},
		{"/console/../go.mod", 404, ""},
	} {
		res, _ := get(t, srv.URL+tc.path, nil)
		if res.StatusCode != tc.status || !strings.Contains(res.Header.Get("Content-Type"), tc.ctype) {
			t.Errorf("%s: %d %s", tc.path, res.StatusCode, res.Header.Get("Content-Type"))
		}
	}
}

// Ensure the first load (page, script, styles, icon and what the script imports) stays
// under 200 KB compressed.
func TestFirstLoadSize(t *testing.T) {
	t.Parallel()
	h := New()
	h.once.Do(h.load)
	total := 0
	for name, f := range h.files {
		if strings.HasSuffix(name, ".txt") {
			continue // licences, never loaded by the page
		}
		n := len(f.body)
		if f.gzipped != nil {
			n = len(f.gzipped)
		}
		total += n
	}
	t.Logf("first load: %d bytes compressed", total)
	if total > 200<<10 {
		t.Fatalf("the console's files are %d bytes compressed, over 200 KB", total)
	}
}

func TestAcceptsGzip(t *testing.T) {
	t.Parallel()
	for header, want := range map[string]bool{
		"": false, "gzip": true, "gzip, deflate, br": true, "br;q=1, gzip;q=0.5": true, "gzip;q=0": false,
		"identity": false, "*": true, "GZIP": true,
	} {
		if got := acceptsGzip(header); got != want {
			t.Errorf("acceptsGzip(%q) = %v, want %v", header, got, want)
		}
	}
}

// Ensure the gzip and the plain answer of a file carry different entity tags, each
// revalidated by its own: they are different representations (RFC 9110, 8.8.3), and a cache
// that took one for the other could answer gzip bytes to a client that does not accept them.
func TestHandler_ETagPerEncoding(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(New())
	t.Cleanup(srv.Close) // after the parallel subtests
	const file = "/console/app.js"
	gz := map[string]string{"Accept-Encoding": "gzip"}
	plainRes, _ := get(t, srv.URL+file, nil)
	gzipRes, _ := get(t, srv.URL+file, gz)
	plainTag, gzipTag := plainRes.Header.Get("ETag"), gzipRes.Header.Get("ETag")
	if gzipRes.Header.Get("Content-Encoding") != "gzip" {
		t.Fatalf("%s was not answered gzip", file)
	}
	if plainTag == "" || plainTag == gzipTag {
		t.Fatalf("ETag plain %s, gzip %s: want two different tags", plainTag, gzipTag)
	}
	for _, tc := range []struct {
		name        string
		header      map[string]string
		wantStatus  int
		wantGzipped bool
	}{
		{"PlainTagPlainClient", map[string]string{"If-None-Match": plainTag}, http.StatusNotModified, false},
		{"GzipTagGzipClient", map[string]string{"If-None-Match": gzipTag, "Accept-Encoding": "gzip"}, http.StatusNotModified, true},
		{"WeakGzipTag", map[string]string{"If-None-Match": "W/" + gzipTag, "Accept-Encoding": "gzip"}, http.StatusNotModified, true},
		{"GzipTagPlainClient", map[string]string{"If-None-Match": gzipTag}, http.StatusOK, false},
		{"PlainTagGzipClient", map[string]string{"If-None-Match": plainTag, "Accept-Encoding": "gzip"}, http.StatusOK, true},
		{"OneOfSeveral", map[string]string{"If-None-Match": `"x", ` + plainTag}, http.StatusNotModified, false},
		{"Any", map[string]string{"If-None-Match": "*"}, http.StatusNotModified, false},
		{"OtherTag", map[string]string{"If-None-Match": `"0123"`}, http.StatusOK, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res, _ := get(t, srv.URL+file, tc.header)
			if got, want := res.StatusCode, tc.wantStatus; got != want {
				t.Fatalf("status=%d, want %d", got, want)
			}
			if got, want := res.Header.Get("ETag"), map[bool]string{false: plainTag, true: gzipTag}[tc.wantGzipped]; got != want {
				t.Errorf("ETag=%s, want %s", got, want)
			}
		})
	}
}
