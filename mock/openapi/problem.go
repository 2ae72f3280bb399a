package openapi

import (
	"net/http"

	"github.com/acme/app/mock"
)

// ProblemTypeBase begins the type of every problem answer. The names after it are Prism's
// (NO_PATH_MATCHED_ERROR, UNPROCESSABLE_ENTITY, …), so clients written against Prism read
// these answers unchanged.
const ProblemTypeBase = "https://stoplight.io/prism/errors#"

// ProblemType is the media type of error answers (RFC 7807).
const ProblemType = "application/problem+json"

// Problem types the mock answers with.
const (
	TypeNoPathMatched   = "NO_PATH_MATCHED_ERROR"
	TypeNoMethodMatched = "NO_METHOD_MATCHED_ERROR"
	TypeUnprocessable   = "UNPROCESSABLE_ENTITY"
	TypeUnauthorized    = "UNAUTHORIZED"
	TypeNotAcceptable   = "NOT_ACCEPTABLE"
	TypeContentType     = "INVALID_CONTENT_TYPE"
	TypeNotFound        = "NOT_FOUND"
	TypeNoResponse      = "NO_RESPONSE_DEFINED"
	// TypeAnswerTooLarge is this mock's own: the answer would pass MaxAnswer.
	TypeAnswerTooLarge = "ANSWER_TOO_LARGE"
)

// Violation is one way a request breaks the description: where (["body", "name"],
// ["query", "limit"]), how bad ("Error"), which rule (the JSON Schema keyword: "type",
// "required", "minimum", …) and a sentence.
type Violation struct {
	Location []string `json:"location"`
	Severity string   `json:"severity"`
	Code     string   `json:"code"`
	Message  string   `json:"message"`
}

// problemBody is an RFC 7807 answer.
type problemBody struct {
	Type       string      `json:"type"`
	Title      string      `json:"title"`
	Status     int         `json:"status"`
	Detail     string      `json:"detail"`
	Validation []Violation `json:"validation,omitempty"`
}

// problem answers status with an RFC 7807 body of that type.
func problem(status int, typ, title, detail string, violations []Violation) *mock.Response {
	body, err := marshal(problemBody{Type: ProblemTypeBase + typ, Title: title, Status: status, Detail: detail, Validation: violations})
	if err != nil {
		body = []byte(`{"status":500}`)
	}
	return &mock.Response{Status: status, Body: body, Headers: map[string]string{"Content-Type": ProblemType}}
}

// NotFound answers every request 404 with a NO_PATH_MATCHED_ERROR problem: what a server
// that serves only descriptions answers for a path none of them has.
func NotFound() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := problem(http.StatusNotFound, TypeNoPathMatched, "Route not resolved, no path matched",
			"The route "+r.URL.Path+" hasn't been found in the specification file", nil)
		w.Header().Set("Content-Type", ProblemType)
		w.WriteHeader(p.Status)
		_, _ = w.Write(p.Body)
	})
}
