package httpapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"

	"github.com/acme/app/internal/admin"
	"github.com/acme/app/internal/apperr"
	"github.com/acme/app/internal/budget"
	"github.com/acme/app/internal/validate"
)

// handleAdminUsers answers GET /api/admin/users[?limit=N&after=ID]: a page of users, oldest
// first, with roles, month spend and budget; a Link header (rel="next") names the next page.
func handleAdminUsers(svc *admin.Service) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		limit := 0
		if raw := q.Get("limit"); raw != "" {
			n, err := strconv.Atoi(raw)
			if err != nil {
				writeError(w, r, apperr.Validation(validate.IsInt("limit")))
				return
			}
			limit = n
			if n < 1 {
				limit = -1 // refused: 0 asked for is not the default
			}
		}
		users, next, err := svc.Users(r.Context(), q.Get("after"), limit)
		if err != nil {
			writeError(w, r, err)
			return
		}
		if next != "" {
			link := url.Values{"after": {next}}
			if limit > 0 {
				link.Set("limit", strconv.Itoa(limit))
			}
			w.Header().Set("Link", "</api/admin/users?"+link.Encode()+`>; rel="next"`)
		}
		encode(w, http.StatusOK, users)
	})
}

// handleAdminBudget answers PUT /api/admin/users/{id}/budget {limit: number | null}: the user
// with their new own budget.
func handleAdminBudget(svc *admin.Service) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fields, err := decodeFields(w, r)
		if err != nil {
			writeError(w, r, err)
			return
		}
		limit, err := parseLimit(fields)
		if err != nil {
			writeError(w, r, err)
			return
		}
		u, err := svc.SetBudget(r.Context(), r.PathValue("id"), limit)
		if err != nil {
			writeError(w, r, err)
			return
		}
		encode(w, http.StatusOK, u)
	})
}

// parseLimit reads {limit}: a number of dollars budget.ValidLimit accepts, or null for none.
// The property must be present: a body without it is a mistake, not a request to clear.
func parseLimit(fields map[string]json.RawMessage) (*float64, error) {
	raw, ok := fields["limit"]
	msg := "limit must be " + budget.LimitRule + " a month, or null"
	if !ok {
		return nil, apperr.Validation(msg)
	}
	if bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return nil, nil
	}
	var v float64
	if validate.IsNull(raw) || json.Unmarshal(raw, &v) != nil || !budget.ValidLimit(v) {
		return nil, apperr.Validation(msg)
	}
	return &v, nil
}

// handleAdminRole answers PUT (grant) and DELETE (revoke) /api/admin/users/{id}/roles/{role}:
// the user with their roles now.
func handleAdminRole(svc *admin.Service, grant bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		caller, _ := CallerFrom(r.Context())
		id, role := r.PathValue("id"), r.PathValue("role")
		var u *admin.User
		var err error
		if grant {
			u, err = svc.Grant(r.Context(), id, role)
		} else {
			u, err = svc.Revoke(r.Context(), caller.ID, id, role)
		}
		if err != nil {
			writeError(w, r, err)
			return
		}
		encode(w, http.StatusOK, u)
	})
}
