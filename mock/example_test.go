package mock_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http/httptest"
	"time"

	"github.com/acme/app/mock"
)

// A test builds its own interceptor and puts it in an http.Client.
func Example() {
	cfg := mock.DefaultConfig()
	cfg.FallbackToNetwork = false // unmatched requests fail loudly
	ic := mock.New(cfg, mock.WithMocks(mock.Definitions{
		"GET /users/:id": func(ctx context.Context, r *mock.Request) (*mock.Response, error) {
			return &mock.Response{Data: map[string]string{"id": r.Param("id"), "name": "Ada"}}, nil
		},
	}))
	defer ic.Close()

	resp, err := ic.Client().Get("https://api.example.com/users/42")
	if err != nil {
		panic(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Println(resp.StatusCode, string(body))

	_, err = ic.Client().Get("https://api.example.com/user/42")
	var me *mock.Error
	if errors.As(err, &me) {
		fmt.Println(me.Code, me.Closest)
	}
	fmt.Println("calls:", ic.Calls("GET /users/:id"), "pending:", ic.Pending())
	// Output:
	// 200 {"id":"42","name":"Ada"}
	// ROUTE_MATCH_FAILED [GET /users/:id]
	// calls: 1 pending: []
}

// The same interceptor serves real clients as an http.Handler.
func ExampleInterceptor_ServeHTTP() {
	cfg := mock.DefaultConfig()
	cfg.FallbackToNetwork = false
	ic := mock.New(cfg, mock.WithMocks(mock.Definitions{
		"GET /health": mock.JSON(mock.StatusOK, map[string]string{"status": "ok"}),
	}))
	srv := httptest.NewServer(ic)
	defer srv.Close()

	for _, path := range []string{"/health", "/nope"} {
		resp, err := srv.Client().Get(srv.URL + path)
		if err != nil {
			panic(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Println(resp.StatusCode, string(body))
	}
	// Output:
	// 200 {"status":"ok"}
	// 404 {"closest":["GET /health"],"code":"ROUTE_MATCH_FAILED","error":"Not Found","message":"no mock matches GET /nope","statusCode":404}
}

// Definitions can be replaced at runtime, atomically.
func ExampleInterceptor_SetMocks() {
	ic := mock.New(mock.DefaultConfig())
	err := ic.SetMocks(mock.Definitions{
		"GET /a":    mock.JSON(200, "a"),
		"POST /b":   mock.JSON(201, "b"),
		"fetch /c":  mock.JSON(200, "c"),
		"DELETE /d": nil,
	})
	var me *mock.Error
	if errors.As(err, &me) {
		for _, e := range me.Validation.Errors {
			fmt.Println(e.Code, e.Route)
		}
	}
	fmt.Println(len(ic.Mocks()), "mocks registered")
	_ = ic.SetMocks(mock.Definitions{"GET /a": mock.JSON(200, "a"), "POST /b": mock.JSON(201, "b")})
	fmt.Println(ic.Mocks())
	// Output:
	// NIL_HANDLER DELETE /d
	// INVALID_METHOD fetch /c
	// 0 mocks registered
	// [GET /a POST /b]
}

// The matcher ranks static segments over parameters over wildcards.
func ExampleMatcher_Match() {
	m := mock.NewMatcher(mock.DefaultRouteMatchingConfig())
	for _, p := range []string{"/users/search", "/users/:id", "/users/*"} {
		r := m.Match(p, "https://api.example.com/users/search?q=x", "GET")
		fmt.Println(p, r.Matches, r.Params, r.Score)
	}
	fmt.Println(m.NormalizeURL("HTTPS://API.example.com:443//Users/./42/?b=2&a=1"))
	// Output:
	// /users/search true map[] 31
	// /users/:id true map[id:search] 29
	// /users/* true map[*:search] 26
	// https://api.example.com/users/42?a=1&b=2
}

// ValidateDefinitions reports errors and warnings with codes.
func ExampleValidateDefinitions() {
	res := mock.ValidateDefinitions(mock.Definitions{
		"GET /users/:id":       mock.JSON(200, nil),
		"GET /users/:name":     mock.JSON(200, nil),
		"GET /orgs/:id/at/:id": mock.JSON(200, nil),
	})
	fmt.Println(res.Valid)
	for _, e := range append(res.Errors, res.Warnings...) {
		fmt.Println(e.Severity, e.Code, e.Route)
	}
	// Output:
	// false
	// error DUPLICATE_PARAM GET /orgs/:id/at/:id
	// warning CONFLICTING_ROUTE GET /users/:name
}

// A seeded generator gives the same realistic data on every run.
func ExampleNewGenerator() {
	g := mock.NewGenerator(2026)
	u := g.User(mock.User{Role: "admin"})
	fmt.Println(u.Role, u.Email != "", u.Address.City != "")
	again := mock.NewGenerator(2026).User(mock.User{Role: "admin"})
	fmt.Println(again.Email == u.Email)
	fmt.Println(len(mock.Array(3, func(int) mock.Product { return g.Product(mock.Product{}) })))
	// Output:
	// admin true true
	// true
	// 3
}

// Middleware from the factory: auth answers 401 before the handler runs.
func ExampleAuthMiddleware() {
	cfg := mock.DefaultConfig()
	cfg.Middleware = []mock.Middleware{
		mock.AuthMiddleware(mock.AuthOptions{Tokens: []string{"secret"}}),
		mock.DelayMiddleware(mock.Fixed(time.Millisecond)),
	}
	ic := mock.New(cfg, mock.WithMocks(mock.Definitions{"GET /me": mock.JSON(200, "me")}))
	for _, token := range []string{"", "secret"} {
		r := httptest.NewRequest("GET", "/me", nil)
		if token != "" {
			r.Header.Set("Authorization", "Bearer "+token)
		}
		w := httptest.NewRecorder()
		ic.ServeHTTP(w, r)
		fmt.Println(w.Code, w.Body.String())
	}
	// Output:
	// 401 {"error":"Unauthorized","message":"Unauthorized","statusCode":401}
	// 200 "me"
}
