package httpapi

import (
	"net/http"

	"github.com/acme/app/internal/ai/providers"
)

// router is where addRoutes registers the routes: the server's http.ServeMux, or a test's
// recorder (the OpenAPI description is checked against this list).
type router interface {
	Handle(pattern string, handler http.Handler)
}

// addRoutes lists every route of the API. docs/openapi.yaml describes each one: a test fails
// when a route is missing there, or the description has a route that is not here.
func addRoutes(mux router, opts Options, deps Deps, rl *rateLimiter) {
	authn := &authenticator{tokens: deps.Tokens, accounts: deps.Accounts}
	if deps.Keys != nil {
		authn.keys = deps.Keys
	}
	protect := func(h http.Handler) http.Handler { return requireAuth(authn, false, h) }
	// A personal API key acts as its user on the AI routes and /v1 only.
	protectAI := func(h http.Handler) http.Handler { return requireAuth(authn, true, h) }
	admin := func(h http.Handler) http.Handler { return protect(requireRole("admin", h)) }
	authLimit := rl.limit("auth", opts.AuthRateLimit, opts.AuthRateWindow)

	// Service.
	mux.Handle("GET /api", handleRoot())
	mux.Handle("GET /api/{$}", handleRoot())
	mux.Handle("GET /api/health", handleHealth(deps.DB, recorderHealth(deps.Usage), opts.Version))
	mux.Handle("GET /api/openapi.json", handleOpenAPI())

	// Accounts (auth).
	if deps.Auth != nil {
		mux.Handle("POST /api/auth/register", authLimit(handleRegister(deps.Auth)))
		mux.Handle("POST /api/auth/login", authLimit(handleLogin(deps.Auth)))
		mux.Handle("GET /api/auth/profile", protect(handleProfile(deps.Auth)))
	}

	// AI proxy and usage (ai, usage).
	if deps.AI != nil {
		for _, p := range providers.List { // /api/ai/openai/chat, /api/ai/anthropic/messages, /api/ai/gemini/generate
			mux.Handle("POST /api/ai/"+p.Name+"/"+p.Endpoint, protectAI(handleAIComplete(deps.AI, p.Name)))
		}
	}
	if deps.Usage != nil {
		mux.Handle("GET /api/ai/usage", protectAI(handleUsageSummary(deps.Usage)))
		mux.Handle("GET /api/ai/usage/providers", protectAI(handleUsageProviders(deps.Usage)))
		mux.Handle("GET /api/ai/usage/daily", protectAI(handleUsageDaily(deps.Usage)))
	}
	if deps.Budget != nil {
		mux.Handle("GET /api/ai/budget", protectAI(handleBudget(deps.Budget)))
	}

	// Personal API keys (keys): managed with an access token only.
	if deps.Keys != nil {
		mux.Handle("POST /api/keys", protect(handleKeyCreate(deps.Keys)))
		mux.Handle("GET /api/keys", protect(handleKeyList(deps.Keys)))
		mux.Handle("DELETE /api/keys/{id}", protect(handleKeyRevoke(deps.Keys)))
	}

	// Administration of users (console): admins only.
	if a := deps.Admin; a != nil {
		mux.Handle("GET /api/admin/users", admin(handleAdminUsers(a)))
		mux.Handle("PUT /api/admin/users/{id}/budget", admin(handleAdminBudget(a)))
		mux.Handle("PUT /api/admin/users/{id}/roles/{role}", admin(handleAdminRole(a, true)))
		mux.Handle("DELETE /api/admin/users/{id}/roles/{role}", admin(handleAdminRole(a, false)))
	}

	// The OpenAI-compatible endpoint (gateway), outside /api: every failure of its routes, the
	// middleware's refusals included, in OpenAI's error format.
	if gw := deps.Gateway; gw != nil {
		v1 := func(h http.Handler) http.Handler { return withFormat(openAIFormat, protectAI(h)) }
		mux.Handle("POST /v1/chat/completions", v1(withMaxBody(opts.MaxAIBodyBytes, handleV1Chat(gw))))
		mux.Handle("POST /v1/responses", v1(withMaxBody(opts.MaxAIBodyBytes, handleV1Responses(gw))))
		mux.Handle("POST /v1/embeddings", v1(withMaxBody(opts.MaxAIBodyBytes, handleV1Embeddings(gw))))
		mux.Handle("GET /v1/models", v1(handleV1Models(gw)))
		mux.Handle("GET /v1/models/{provider}/{model...}", v1(handleV1Model(gw)))
		mux.Handle("GET /v1/models/{model}", v1(handleV1Model(gw))) // the model's slashes escaped, as the SDKs send it
		// Anthropic's Messages API, in Anthropic's error format.
		mux.Handle("POST /v1/messages", withFormat(anthropicFormat, protectAI(withMaxBody(opts.MaxAIBodyBytes, handleV1Messages(gw)))))
		mux.Handle("POST /v1/messages/count_tokens", withFormat(anthropicFormat, protectAI(withMaxBody(opts.MaxAIBodyBytes, handleV1CountTokens(gw)))))
	}

	// MongoDB utilities (dbcheck).
	if deps.DBCheck != nil {
		mux.Handle("POST /api/storage/mongodb/test", protect(handleMongoTest(deps.DBCheck)))
		mux.Handle("POST /api/storage/mongodb/query", protect(handleMongoQuery(deps.DBCheck)))
	}

	// Property templates (templates).
	if t := deps.Templates; t != nil {
		const base = "/api/spaces/{spaceId}/properties"
		mux.Handle("GET "+base+"/templates", protect(handleTemplatesList(t)))
		mux.Handle("POST "+base+"/templates", protect(handleTemplateCreate(t)))
		mux.Handle("GET "+base+"/templates/widget/{widgetType}", protect(handleTemplateForWidget(t)))
		mux.Handle("GET "+base+"/templates/{templateId}", protect(handleTemplateGet(t)))
		mux.Handle("PUT "+base+"/templates/{templateId}", protect(handleTemplateUpdate(t)))
		mux.Handle("DELETE "+base+"/templates/{templateId}", protect(handleTemplateDelete(t)))
		mux.Handle("POST "+base+"/migrate-templates-to-core", admin(handleTemplatesMigrate(t)))
		mux.Handle("DELETE "+base+"/cleanup-space-templates", admin(handleTemplatesCleanup(t)))
	}
}
