package httpapi

import (
	"net/http"

	"github.com/acme/app/internal/apperr"
	"github.com/acme/app/internal/budget"
	"github.com/acme/app/internal/keys"
)

// handleKeyCreate answers POST /api/keys: the new key, shown this once (201).
func handleKeyCreate(svc *keys.Service) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		caller, _ := CallerFrom(r.Context())
		fields, err := decodeFields(w, r)
		if err != nil {
			writeError(w, r, err)
			return
		}
		in, msgs := keys.ParseCreate(fields)
		if len(msgs) > 0 {
			writeError(w, r, apperr.Validation(msgs...))
			return
		}
		created, err := svc.Create(r.Context(), caller.ID, caller.Email, in)
		if err != nil {
			writeError(w, r, err)
			return
		}
		encode(w, http.StatusCreated, created)
	})
}

// handleKeyList answers GET /api/keys: the caller's live keys, never their secrets.
func handleKeyList(svc *keys.Service) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		caller, _ := CallerFrom(r.Context())
		list, err := svc.List(r.Context(), caller.ID)
		if err != nil {
			writeError(w, r, err)
			return
		}
		encode(w, http.StatusOK, list)
	})
}

// handleKeyRevoke answers DELETE /api/keys/{id} with 204; 404 for a key that is not the
// caller's live key.
func handleKeyRevoke(svc *keys.Service) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		caller, _ := CallerFrom(r.Context())
		if err := svc.Revoke(r.Context(), caller.ID, r.PathValue("id")); err != nil {
			writeError(w, r, err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
}

// handleBudget answers GET /api/ai/budget: the caller's budget of the current month.
func handleBudget(svc *budget.Service) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		caller, _ := CallerFrom(r.Context())
		st, err := svc.Status(r.Context(), caller.ID)
		if err != nil {
			writeError(w, r, err)
			return
		}
		encode(w, http.StatusOK, st)
	})
}
