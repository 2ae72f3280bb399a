package httpapi

import (
	"net/http"

	"github.com/acme/app/internal/apperr"
	"github.com/acme/app/internal/dbcheck"
)

// handleMongoTest answers POST /api/storage/mongodb/test.
func handleMongoTest(svc *dbcheck.Service) http.Handler {
	return handleParsed(dbcheck.ParseTest, svc.Test, http.StatusOK)
}

// handleMongoQuery answers POST /api/storage/mongodb/query. The answer's documents are held
// in the process's bound on buffered bytes until it is written.
func handleMongoQuery(svc *dbcheck.Service) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fields, err := decodeFields(w, r)
		if err != nil {
			writeError(w, r, err)
			return
		}
		in, msgs := svc.ParseQuery(fields)
		if len(msgs) > 0 {
			writeError(w, r, apperr.Validation(msgs...))
			return
		}
		res, err := svc.Query(r.Context(), in)
		if err != nil {
			writeError(w, r, err)
			return
		}
		defer res.Release()
		encode(w, http.StatusOK, res)
	})
}
