package httpapi

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/acme/app/internal/apperr"
	"github.com/acme/app/internal/auth"
)

// handleParsed is the adapter of a JSON-body route: decode the body into raw fields, parse and
// validate them (class-validator messages answer 400), call the service, encode its answer.
func handleParsed[In, Out any](parse func(map[string]json.RawMessage) (In, []string),
	call func(context.Context, In) (Out, error), status int) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fields, err := decodeFields(w, r)
		if err != nil {
			writeError(w, r, err)
			return
		}
		in, msgs := parse(fields)
		if len(msgs) > 0 {
			writeError(w, r, apperr.Validation(msgs...))
			return
		}
		out, err := call(r.Context(), in)
		if err != nil {
			writeError(w, r, err)
			return
		}
		encode(w, status, out)
	})
}

func handleRegister(svc *auth.Service) http.Handler {
	return handleParsed(auth.ParseRegister, svc.Register, http.StatusCreated)
}

func handleLogin(svc *auth.Service) http.Handler {
	return handleParsed(auth.ParseLogin, svc.Login, http.StatusOK)
}

func handleProfile(svc *auth.Service) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, _ := CallerFrom(r.Context())
		u, err := svc.Profile(r.Context(), c.ID)
		if err != nil {
			writeError(w, r, err)
			return
		}
		encode(w, http.StatusOK, u)
	})
}
