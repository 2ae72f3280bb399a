package mockfile_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/acme/app/mock"
	"github.com/acme/app/mock/mockfile"
)

// FuzzParse checks that no mock file, YAML or JSON, makes the reader panic; that a file it
// refuses comes with at least one problem; and that a file it accepts serves a request to
// each of its routes without a panic and without reaching the network.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"mocks:\n  \"GET /users/:id\":\n    data: {id: \"{{.Params.id}}\"}\n",
		"mocks:\n  \"POST /echo\":\n    data: {x: \"{{.Body.x}}\", q: \"{{.Query.q}}\"}\n",
		"mocks:\n  \"GET /s\":\n    sequence:\n      - status: 500\n      - data: [1, 2]\n",
		"mocks:\n  \"GET /g\":\n    generate: {kind: user, count: 3, seed: 1}\n",
		"config:\n  persistence: {enabled: true}\n  cache: {methods: [\"*\"]}\nmocks:\n  \"GET /a\": {body: \"{{len (seq 3)}}\", cache: true}\n",
		"config:\n  middleware:\n    - auth: {tokens: [t]}\n    - rateLimit: {limit: 2, window: 1s}\nmocks:\n  \"GET /a\": {data: 1}\n",
		`{"mocks": {"GET /a": {"status": 201, "headers": {"X-A": "{{uuid}}"}, "data": {"a": "{{int 1 9}}"}}}}`,
		"mocks:\n  \"GET /r\":\n    body: \"{{range 3}}{{string 4}}{{end}}\"\n",
		"mocks: [1, 2]\n", "config: 7\n", "&a [*a]\n",
		"mocks:\n  \"GET /a\": {data: \"caf\xe9\"}\n", "mocks:\n  \"GET /a\": {data: \"\x01\"}\n", "\xff\xfem\x00",
	} {
		f.Add([]byte(s), false)
	}
	f.Fuzz(func(t *testing.T, data []byte, asJSON bool) {
		tm := time.AfterFunc(5*time.Second, func() { panic(fmt.Sprintf("slow input %q", data)) })
		defer tm.Stop()
		name := "mocks.yaml"
		if asJSON {
			name = "mocks.json"
		}
		set, err := mockfile.Parse(data, name)
		if err != nil {
			if le, ok := err.(*mockfile.LoadError); !ok || len(le.Problems) == 0 {
				t.Fatalf("refused without a problem: %v", err)
			}
			return
		}
		// Delays would only slow the fuzzer down; everything else is served as written.
		if bytes.Contains(data, []byte("delay")) || len(set.Routes) > 20 {
			return
		}
		cfg := set.InterceptorConfig()
		cfg.FallbackToNetwork = false
		cfg.Persistence.Enabled = false
		ic := mock.New(cfg, mock.WithMocks(set.Definitions()))
		defer ic.Close()
		client := ic.Client()
		for _, r := range set.Routes {
			method, path, ok := strings.Cut(r.Key, " ")
			if !ok || method == "*" {
				method, path = "GET", r.Key
			}
			path = strings.NewReplacer(":", "p", "*", "x", "{", "", "}", "").Replace(path)
			if !strings.HasPrefix(path, "/") {
				path = "/" + path
			}
			req, err := http.NewRequest(method, "http://mock.test"+path, strings.NewReader(`{"x":1}`))
			if err != nil {
				continue
			}
			req.Header.Set("Content-Type", "application/json")
			if resp, err := client.Do(req); err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}
	})
}
