package httpapi

import (
	"encoding/json"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/acme/app/docs"
	"github.com/acme/app/internal/admin"
	"github.com/acme/app/internal/ai"
	"github.com/acme/app/internal/auth"
	"github.com/acme/app/internal/budget"
	"github.com/acme/app/internal/dbcheck"
	"github.com/acme/app/internal/gateway"
	"github.com/acme/app/internal/keys"
	"github.com/acme/app/internal/ratelimit"
	"github.com/acme/app/internal/templates"
	"github.com/acme/app/internal/usage"
)

// patterns records the patterns addRoutes registers.
type patterns []string

func (p *patterns) Handle(pattern string, _ http.Handler) { *p = append(*p, pattern) }

// registeredRoutes returns "METHOD /path" for every route of routes.go, every service present.
// "{$}" (a path ending in a slash, matched exactly) is that path.
func registeredRoutes(t *testing.T) []string {
	t.Helper()
	var got patterns
	deps := Deps{Tokens: auth.NewTokens([]byte("x"), 0), Auth: &auth.Service{}, AI: &ai.Service{}, Usage: &usage.Service{},
		DBCheck: &dbcheck.Service{}, Templates: &templates.Service{}, Keys: &keys.Service{}, Budget: &budget.Service{}, Admin: &admin.Service{},
		Gateway: &gateway.Service{}}
	addRoutes(&got, Options{}, deps, &rateLimiter{limiter: ratelimit.NewMemory(0)})
	var out []string
	for _, p := range got {
		method, path, ok := strings.Cut(p, " ")
		if !ok {
			t.Fatalf("route %q has no method", p)
		}
		path = strings.TrimSuffix(path, "{$}")
		path = strings.ReplaceAll(path, "...}", "}") // a trailing wildcard is one path parameter
		if path == "" {
			path = "/"
		}
		out = append(out, method+" "+path)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// describedRoutes returns "METHOD /path" for every operation of docs/openapi.yaml.
func describedRoutes(t *testing.T) []string {
	t.Helper()
	raw, err := OpenAPIJSON(docs.OpenAPI)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		OpenAPI string                                `json:"openapi"`
		Paths   map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(doc.OpenAPI, "3.1.") {
		t.Fatalf("openapi %q, want 3.1.x", doc.OpenAPI)
	}
	var out []string
	for path, item := range doc.Paths {
		for method := range item {
			switch method {
			case "get", "put", "post", "delete", "patch", "head", "options", "trace":
				out = append(out, strings.ToUpper(method)+" "+path)
			}
		}
	}
	slices.Sort(out)
	return out
}

// Ensure docs/openapi.yaml describes exactly the routes of routes.go: a route added to one
// must be added to the other.
func TestOpenAPI_DescribesEveryRoute(t *testing.T) {
	t.Parallel()
	registered, described := registeredRoutes(t), describedRoutes(t)
	for _, r := range registered {
		if !slices.Contains(described, r) {
			t.Errorf("route %s (routes.go) is missing from docs/openapi.yaml", r)
		}
	}
	for _, r := range described {
		if !slices.Contains(registered, r) {
			t.Errorf("docs/openapi.yaml describes %s, which routes.go does not register", r)
		}
	}
	if len(registered) < 20 {
		t.Fatalf("only %d routes registered: %v", len(registered), registered)
	}
}

// Ensure docs/api.md counts the paths of docs/openapi.yaml as they are.
func TestOpenAPI_DocsCountThePaths(t *testing.T) {
	t.Parallel()
	md, err := os.ReadFile("../../docs/api.md")
	if err != nil {
		t.Fatal(err)
	}
	const cmd = "jq '.openapi, (.paths | keys | length)'"
	_, after, ok := strings.Cut(string(md), cmd)
	if !ok {
		t.Fatalf("docs/api.md no longer shows %s", cmd)
	}
	lines := strings.Split(after, "\n")
	if len(lines) < 3 {
		t.Fatalf("docs/api.md: no answer after %s", cmd)
	}
	shown, err := strconv.Atoi(strings.TrimSpace(lines[2]))
	if err != nil {
		t.Fatalf("docs/api.md: %q after %s is not a count", lines[2], cmd)
	}
	raw, err := OpenAPIJSON(docs.OpenAPI)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Paths map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	if shown != len(doc.Paths) {
		t.Errorf("docs/api.md shows %d paths; docs/openapi.yaml has %d", shown, len(doc.Paths))
	}
}
