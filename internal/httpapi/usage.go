package httpapi

import (
	"context"
	"net/http"

	"github.com/acme/app/internal/usage"
)

// handleCallerDays answers what read returns for the caller over ?days=N (1..366, default 30).
func handleCallerDays[T any](read func(ctx context.Context, userID string, days int) (T, error)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		caller, _ := CallerFrom(r.Context())
		days, err := usage.ParseDays(r.URL.Query().Get("days"))
		if err != nil {
			writeError(w, r, err)
			return
		}
		v, err := read(r.Context(), caller.ID, days)
		if err != nil {
			writeError(w, r, err)
			return
		}
		encode(w, http.StatusOK, v)
	})
}

// handleUsageSummary answers the caller's totals.
func handleUsageSummary(svc *usage.Service) http.Handler { return handleCallerDays(svc.Summary) }

// handleUsageProviders answers the caller's usage per provider and model, largest cost first.
func handleUsageProviders(svc *usage.Service) http.Handler { return handleCallerDays(svc.ByProvider) }

// handleUsageDaily answers the caller's totals per UTC day, oldest first, zeros included.
func handleUsageDaily(svc *usage.Service) http.Handler { return handleCallerDays(svc.Daily) }
