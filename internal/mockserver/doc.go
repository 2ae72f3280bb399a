// Package mockserver is `app mock serve`: a standalone mock HTTP server for
// front-end developers, built on the public package mock.
//
// It reads a mock file (YAML or JSON, see docs/mock-file.md) into mock
// definitions whose responses are text/template strings rendered over the
// request, with the mock generator as template functions; it validates the
// file at load (every problem with its route and line), reloads it on change,
// proxies unmatched requests to a target and can record those exchanges as
// mocks, exposes a runtime admin API under /__mock/, answers CORS, and with
// no file serves a built-in mock of this project's own /api whose answers are
// the service packages' contract types.
package mockserver
