package httpapi

import (
	"net/http"

	"github.com/acme/app/internal/dbcheck"
)

// handleMongoTest answers POST /api/storage/mongodb/test.
func handleMongoTest(svc *dbcheck.Service) http.Handler {
	return handleParsed(dbcheck.ParseTest, svc.Test, http.StatusOK)
}

// handleMongoQuery answers POST /api/storage/mongodb/query.
func handleMongoQuery(svc *dbcheck.Service) http.Handler {
	return handleParsed(svc.ParseQuery, svc.Query, http.StatusOK)
}
