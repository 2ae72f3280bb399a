package wiremock

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// FuzzMapping checks that no mapping makes the loader panic, that a mapping it skips is
// reported on one of its lines, and that a mapping it keeps answers any request (matched or not) without a panic.
func FuzzMapping(f *testing.F) {
	for _, s := range [][3]string{
		{`{"request":{"method":"GET","url":"/a"},"response":{"status":200,"body":"x"}}`, "GET", "/a"},
		{`{"request":{"urlPathTemplate":"/u/{id}","pathParameters":{"id":{"matches":"[0-9]+"}}},"response":{"jsonBody":{"a":[1]}}}`, "GET", "/u/42"},
		{`{"request":{"method":"POST","urlPathPattern":"/p/.*","bodyPatterns":[{"equalToJson":{"a":1},"ignoreExtraElements":true},{"matchesJsonPath":"$.a"}]},"response":{"status":201}}`, "POST", "/p/x"},
		{`{"request":{"urlPattern":"/q\\?x=.*","queryParameters":{"x":{"contains":"1"}},"headers":{"H":{"equalTo":"v","caseInsensitive":true}},"cookies":{"c":{"absent":true}}},"response":{"base64Body":"aGk=","headers":{"A":"b"}}}`, "GET", "/q?x=1"},
		{`{"scenarioName":"s","requiredScenarioState":"Started","newScenarioState":"2","request":{"method":"ANY","urlPath":"/s"},"response":{"bodyFileName":"b.txt"}}`, "PUT", "/s"},
		{`{"priority":1,"request":{"url":"/f"},"response":{"fault":"CONNECTION_RESET_BY_PEER"}}`, "GET", "/f"},
		{`{"request":{"url":"/t"},"response":{"transformers":["response-template"]}}`, "GET", "/t"},
	} {
		f.Add([]byte(s[0]), s[1], s[2], `{"a":1}`)
	}
	// Fixed matchers, each with a body that once matched wrongly.
	for _, s := range [][2]string{
		{`{"request":{"method":"POST","bodyPatterns":[{"equalToJson":{"x":[1,3]},"ignoreExtraElements":true}]},"response":{}}`, `{"x":[1,2,3]}`},
		{`{"request":{"method":"POST","bodyPatterns":[{"equalToJson":[{"a":1},{"a":1,"b":2}],"ignoreArrayOrder":true,"ignoreExtraElements":true}]},"response":{}}`, `[{"a":1,"b":2},{"a":1}]`},
		{`{"request":{"method":"POST","bodyPatterns":[{"equalToJson":[[{"a":1},{}],[1,[]]],"ignoreArrayOrder":true}]},"response":{}}`, `[[1,[]],[{},{"a":1}]]`},
		{`{"request":{"method":"POST","bodyPatterns":[{"equalToJson":"{\"n\":9007199254740993}"}]},"response":{}}`, `{"n":9007199254740992}`},
		{`{"request":{"method":"POST","headers":{"Host":{"equalTo":"mock.test"}}},"response":{}}`, ``},
		{`{"request":{"method":"POST","bodyPatterns":[{"contains":"A","caseInsensitive":true}]},"response":{}}`, `a`},
		{`{"request":{"method":"post","urlPath":"/"},"response":{}}`, ``},
		{`{"request":{"method":"POST","headers":{"X-A":{"doesNotMatch":"x.*"}},"queryParameters":{"a":{"doesNotMatch":"x"}}},"response":{}}`, ``},
	} {
		f.Add([]byte(s[0]), "POST", "/", s[1])
	}
	dir := f.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "__files"), 0o755); err != nil {
		f.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "__files", "b.txt"), []byte("from a file"), 0o644); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, mapping []byte, method, target, body string) {
		tm := time.AfterFunc(5*time.Second, func() { panic(fmt.Sprintf("slow mapping %q", mapping)) })
		defer tm.Stop()
		l := &loader{dir: dir, files: filepath.Join(dir, "__files"), rel: "mappings/m.json"}
		l.mapping(mapping, "")
		l.placeProblems(mapping, 0, mapping, l.problems)
		for _, p := range l.problems {
			if p.Line < 1 || p.Line > 1+bytes.Count(mapping, []byte{'\n'}) {
				t.Fatalf("problem %v placed outside the mapping's lines: %q", p, mapping)
			}
		}
		if len(l.stubs) == 0 {
			if len(l.problems) == 0 {
				t.Fatalf("skipped without a problem: %s", mapping)
			}
			return
		}
		if len(l.problems) != 0 {
			t.Fatalf("kept with problems %v: %s", l.problems, mapping)
		}
		if a := l.stubs[0].answer; a.delay.kind != "" || a.fault != "" {
			return // a delay only slows the fuzzer; a fault needs a real connection
		}
		req, err := http.NewRequest(method, "http://mock.test"+target, strings.NewReader(body))
		if err != nil || !strings.HasPrefix(target, "/") {
			return
		}
		req.Header.Set("Cookie", "c=1; c=2")
		w := httptest.NewRecorder()
		newStubs(l.stubs).ServeHTTP(w, req)
		if _, err := io.ReadAll(w.Result().Body); err != nil {
			t.Fatal(err)
		}
	})
}

// FuzzEqualToJSON checks equalToJson against a plain backtracking comparison on small
// documents, with every combination of ignoreArrayOrder and ignoreExtraElements.
func FuzzEqualToJSON(f *testing.F) {
	for _, s := range [][2]string{
		{`[{"a":1},{"a":1,"b":2}]`, `[{"a":1,"b":2},{"a":1}]`},
		{`{"x":[1,3]}`, `{"x":[1,2,3]}`},
		{`[[1,2],[2]]`, `[[2],[2,1,3]]`},
		{`[{},{"a":[1]},1,1]`, `[1,{"a":[2,1]},{"b":1},1,null]`},
		{`{"n":9007199254740993}`, `{"n":9007199254740992}`},
		{`[1,100,-0.5,0]`, `[1.0,1e2,-5E-1,-0.0]`},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, want, got string) {
		w, err1 := decodeJSON([]byte(want))
		g, err2 := decodeJSON([]byte(got))
		if err1 != nil || err2 != nil || !small(w) || !small(g) {
			return
		}
		for _, mode := range [][2]bool{{false, false}, {true, false}, {false, true}, {true, true}} {
			if a, b := jsonEqual(w, g, mode[0], mode[1]), refEqual(w, g, mode[0], mode[1]); a != b {
				t.Fatalf("ignoreArrayOrder=%v ignoreExtraElements=%v: %s vs %s: %v, reference %v", mode[0], mode[1], want, got, a, b)
			}
		}
	})
}

// small reports whether v has at most 6 items per array and 40 values in all.
func small(v any) bool {
	n := 0
	var walk func(v any) bool
	walk = func(v any) bool {
		n++
		switch x := v.(type) {
		case []any:
			if len(x) > 6 {
				return false
			}
			for _, c := range x {
				if !walk(c) {
					return false
				}
			}
		case map[string]any:
			for _, c := range x {
				if !walk(c) {
					return false
				}
			}
		case json.Number:
			if len(x) > 40 {
				return false // big.Rat would spend long on 1e999999999
			}
			_, ok := new(big.Rat).SetString(string(x)) // the reference must read it (not 1E10000000)
			return ok
		}
		return n <= 40
	}
	return walk(v)
}

// refEqual is equalToJson's comparison written the slow, obvious way: unordered arrays try
// every assignment of expected items to distinct request items.
func refEqual(want, got any, order, extra bool) bool {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok || (!extra && len(g) != len(w)) {
			return false
		}
		for k, wv := range w {
			gv, ok := g[k]
			if !ok || !refEqual(wv, gv, order, extra) {
				return false
			}
		}
		return true
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) < len(w) || (!extra && len(g) != len(w)) {
			return false
		}
		if !order {
			for i := range w {
				if !refEqual(w[i], g[i], order, extra) {
					return false
				}
			}
			return true
		}
		used := make([]bool, len(g))
		var try func(i int) bool
		try = func(i int) bool {
			if i == len(w) {
				return true
			}
			for j := range g {
				if !used[j] && refEqual(w[i], g[j], order, extra) {
					used[j] = true
					if try(i + 1) {
						return true
					}
					used[j] = false
				}
			}
			return false
		}
		return try(0)
	case json.Number:
		g, ok := got.(json.Number)
		if !ok {
			return false
		}
		a, _ := new(big.Rat).SetString(string(w))
		b, _ := new(big.Rat).SetString(string(g))
		return a.Cmp(b) == 0
	default:
		return fmt.Sprint(want) == fmt.Sprint(got) && fmt.Sprintf("%T", want) == fmt.Sprintf("%T", got)
	}
}
