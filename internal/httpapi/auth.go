package httpapi

import (
	"net/http"

	"github.com/acme/app/internal/apperr"
	"github.com/acme/app/internal/auth"
)

func handleRegister(svc *auth.Service) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fields, err := decodeFields(w, r)
		if err != nil {
			writeError(w, r, err)
			return
		}
		in, msgs := auth.ParseRegister(fields)
		if len(msgs) > 0 {
			writeError(w, r, apperr.Validation(msgs...))
			return
		}
		res, err := svc.Register(r.Context(), in)
		if err != nil {
			writeError(w, r, err)
			return
		}
		encode(w, http.StatusCreated, res)
	})
}

func handleLogin(svc *auth.Service) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fields, err := decodeFields(w, r)
		if err != nil {
			writeError(w, r, err)
			return
		}
		in, msgs := auth.ParseLogin(fields)
		if len(msgs) > 0 {
			writeError(w, r, apperr.Validation(msgs...))
			return
		}
		res, err := svc.Login(r.Context(), in)
		if err != nil {
			writeError(w, r, err)
			return
		}
		encode(w, http.StatusOK, res)
	})
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
