package mockfile_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/acme/app/mock"
	"github.com/acme/app/mock/mockfile"
)

// A Go test serves, in-process, the same mock file the front end uses through
// `app mock serve --file mocks.yaml`: Load gives the definitions and the configuration, and
// the interceptor's Client answers from them without a network.
func Example() {
	dir, _ := os.MkdirTemp("", "mockfile-example-")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "mocks.yaml")
	_ = os.WriteFile(path, []byte(`
config:
  fallbackToNetwork: false
mocks:
  "GET /users/:id":
    data: {id: "{{.Params.id}}", kind: user}
  "POST /users":
    status: 201
    data: {created: "{{.Body.name}}"}
`), 0o644)

	defs, cfg, err := mockfile.Load(path)
	if err != nil {
		fmt.Println(err)
		return
	}
	ic := mock.New(cfg, mock.WithMocks(defs))
	defer ic.Close()
	client := ic.Client()

	resp, _ := client.Get("http://api.example.com/users/42")
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Println(resp.StatusCode, string(body))

	resp, _ = client.Post("http://api.example.com/users", "application/json", strings.NewReader(`{"name":"Ada"}`))
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Println(resp.StatusCode, string(body))
	// Output:
	// 200 {"id":"42","kind":"user"}
	// 201 {"created":"Ada"}
}

// Parse reports every problem of a file at once, each with its line, route and code, as
// `app mock validate` prints them.
func ExampleParse() {
	_, err := mockfile.Parse([]byte(`
mocks:
  "GET /a": {status: 900}
  "GET /b": {dta: {v: 1}}
  "GET /c": {data: {v: 1}}
`), "mocks.yaml")
	var le *mockfile.LoadError
	if errors.As(err, &le) {
		for _, p := range le.Problems {
			fmt.Println(p.Line, p.Route, p.Code)
		}
	}
	// Output:
	// 3 GET /a INVALID_STATUS
	// 4 GET /b UNKNOWN_FIELD
}

// LoadFile gives the whole file: its routes in file order, its configuration and the
// warnings that did not stop the load.
func ExampleLoadFile() {
	dir, _ := os.MkdirTemp("", "mockfile-example-")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "mocks.yaml")
	_ = os.WriteFile(path, []byte(`
config:
  delay: 100-400
mocks:
  "GET /items/:id": {data: {id: "{{.Params.id}}"}}
  "GET /items/:key": {data: {key: "{{.Params.key}}"}}
`), 0o644)

	set, err := mockfile.LoadFile(path)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, r := range set.Routes {
		fmt.Println(r.Line, r.Key)
	}
	fmt.Println(set.Config.Delay.Min, set.Config.Delay.Max)
	for _, w := range set.Warnings {
		fmt.Println(w.Code)
	}
	// Output:
	// 5 GET /items/:id
	// 6 GET /items/:key
	// 100ms 400ms
	// CONFLICTING_ROUTE
}

// ParseMocks reads the body of POST /__mock/mocks: route keys to response specs, with no
// config section. A sequence answers its steps in turn until ResetSequences.
func ExampleParseMocks() {
	set, err := mockfile.ParseMocks([]byte(`{"POST /pay": {"sequence": [{"status": 503}, {"status": 200, "data": {"paid": true}}]}}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	cfg := set.InterceptorConfig()
	cfg.FallbackToNetwork = false
	ic := mock.New(cfg, mock.WithMocks(set.Definitions()))
	defer ic.Close()
	pay := func() {
		resp, _ := ic.Client().Post("http://shop.example.com/pay", "application/json", nil)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Println(strings.TrimSpace(fmt.Sprint(resp.StatusCode, " ", string(body))))
	}
	pay()
	pay()
	set.ResetSequences()
	pay()
	// Output:
	// 503
	// 200 {"paid":true}
	// 503
}

// ParseDelay reads the delays a mock file may write as strings.
func ExampleParseDelay() {
	for _, s := range []string{"200", "100-400", "1s", "400-100"} {
		d, err := mockfile.ParseDelay(s)
		if err != nil {
			fmt.Println(err)
			continue
		}
		fmt.Println(d.Min, d.Max)
	}
	// Output:
	// 200ms 200ms
	// 100ms 400ms
	// 1s 1s
	// delay "400-100": the maximum is below the minimum
}

// JSONValue makes a YAML document encodable as JSON: mapping keys that are not strings, such
// as status codes, become strings.
func ExampleJSONValue() {
	var doc any
	_ = yaml.Unmarshal([]byte("responses:\n  200: {description: OK}\n  404: {description: Not found}\n"), &doc)
	out, err := json.Marshal(mockfile.JSONValue(doc))
	fmt.Println(string(out), err)
	// Output:
	// {"responses":{"200":{"description":"OK"},"404":{"description":"Not found"}}} <nil>
}
