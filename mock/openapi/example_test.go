package openapi_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/acme/app/mock"
	"github.com/acme/app/mock/openapi"
)

// A Go test mocks a partner's API from its OpenAPI description, in process: the interceptor's
// client answers with the description's examples and refuses what it does not allow.
func Example() {
	spec, err := openapi.Load("testdata/petstore.yaml")
	if err != nil {
		fmt.Println(err) // an *openapi.LoadError lists each problem with its line
		return
	}
	ic := mock.New(mock.DefaultConfig(), mock.WithMocks(spec.Definitions(openapi.Options{})))
	defer ic.Close()
	client := ic.Client()

	show := func(req *http.Request) {
		resp, err := client.Do(req)
		if err != nil {
			fmt.Println(err)
			return
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		fmt.Println(resp.StatusCode, resp.Header.Get("Content-Type"), string(body)[:min(len(body), 60)])
	}
	req, _ := http.NewRequest("GET", "http://partner.example.com/pets/3", nil)
	show(req)
	req.Header.Set("Prefer", "example=rex")
	show(req)
	req, _ = http.NewRequest("POST", "http://partner.example.com/pets", strings.NewReader(`{"name": 5}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-API-Key", "any")
	show(req)
	// Output:
	// 200 application/json {"id":1,"name":"Tom"}
	// 200 application/json {"id":2,"name":"Rex"}
	// 422 application/problem+json {"type":"https://stoplight.io/prism/errors#UNPROCESSABLE_ENT
}
