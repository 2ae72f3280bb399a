package httpapi

import (
	"net/http"

	"github.com/acme/app/internal/dbcheck"
)

// handleMongoTest answers POST /api/storage/mongodb/test.
func handleMongoTest(svc *dbcheck.Service) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fields, err := decodeFields(w, r)
		if err != nil {
			writeError(w, r, err)
			return
		}
		in, err := dbcheck.TestInputFromJSON(fields)
		if err != nil {
			writeError(w, r, err)
			return
		}
		res, err := svc.Test(r.Context(), in)
		if err != nil {
			writeError(w, r, err)
			return
		}
		encode(w, http.StatusOK, res)
	})
}

// handleMongoQuery answers POST /api/storage/mongodb/query.
func handleMongoQuery(svc *dbcheck.Service) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fields, err := decodeFields(w, r)
		if err != nil {
			writeError(w, r, err)
			return
		}
		in, err := dbcheck.QueryInputFromJSON(fields, svc.MaxLimit())
		if err != nil {
			writeError(w, r, err)
			return
		}
		res, err := svc.Query(r.Context(), in)
		if err != nil {
			writeError(w, r, err)
			return
		}
		encode(w, http.StatusOK, res)
	})
}
