package mockfile_test

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

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
