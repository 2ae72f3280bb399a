package httpapi

import (
	"net/http"

	"github.com/acme/app/internal/usage"
)

// handleUsageSummary answers the caller's totals over ?days=N (1..366, default 30).
func handleUsageSummary(svc *usage.Service) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		caller, _ := CallerFrom(r.Context())
		days, err := usage.ParseDays(r.URL.Query().Get("days"))
		if err != nil {
			writeError(w, r, err)
			return
		}
		s, err := svc.Summary(r.Context(), caller.ID, days)
		if err != nil {
			writeError(w, r, err)
			return
		}
		encode(w, http.StatusOK, s)
	})
}

// handleUsageProviders answers the caller's usage per provider and model, largest cost first.
func handleUsageProviders(svc *usage.Service) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		caller, _ := CallerFrom(r.Context())
		days, err := usage.ParseDays(r.URL.Query().Get("days"))
		if err != nil {
			writeError(w, r, err)
			return
		}
		rows, err := svc.ByProvider(r.Context(), caller.ID, days)
		if err != nil {
			writeError(w, r, err)
			return
		}
		encode(w, http.StatusOK, rows)
	})
}
