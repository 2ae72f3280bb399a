package httpapi

import (
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/acme/app/internal/apperr"
	"github.com/acme/app/internal/templates"
	"github.com/acme/app/internal/validate"
)

// sourceHeader tells a client whether a template read came from core or, core being
// unavailable, from the space's own templates.
const sourceHeader = "X-Templates-Source"

// answerTemplates writes a template operation's result with the source it came from, or err.
func answerTemplates(w http.ResponseWriter, r *http.Request, status int, v any, src templates.Source, err error) {
	if err != nil {
		writeError(w, r, err)
		return
	}
	w.Header().Set(sourceHeader, string(src))
	respond(w, r, status, v)
}

func handleTemplatesList(svc *templates.Service) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ts, src, err := svc.List(r.Context(), r.PathValue("spaceId"), queryValues(r).Get("widgetType"))
		answerTemplates(w, r, http.StatusOK, ts, src, err)
	})
}

func handleTemplateGet(svc *templates.Service) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t, src, err := svc.Get(r.Context(), r.PathValue("spaceId"), r.PathValue("templateId"))
		answerTemplates(w, r, http.StatusOK, t, src, err)
	})
}

func handleTemplateForWidget(svc *templates.Service) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t, src, err := svc.ForWidget(r.Context(), r.PathValue("spaceId"), r.PathValue("widgetType"))
		answerTemplates(w, r, http.StatusOK, t, src, err)
	})
}

func handleTemplateCreate(svc *templates.Service) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		in, err := decodeTemplate(w, r)
		if err != nil {
			writeError(w, r, err)
			return
		}
		t, err := svc.Create(r.Context(), in)
		answerTemplates(w, r, http.StatusCreated, t, templates.SourceCore, err)
	})
}

func handleTemplateUpdate(svc *templates.Service) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		in, err := decodeTemplate(w, r)
		if err != nil {
			writeError(w, r, err)
			return
		}
		t, err := svc.Update(r.Context(), r.PathValue("templateId"), in)
		answerTemplates(w, r, http.StatusOK, t, templates.SourceCore, err)
	})
}

func handleTemplateDelete(svc *templates.Service) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t, err := svc.Delete(r.Context(), r.PathValue("templateId"))
		answerTemplates(w, r, http.StatusOK, t, templates.SourceCore, err)
	})
}

// adminWriteTimeout is how long migrate and cleanup may take to answer, in place of
// server.write_timeout (90 s by default, meant for ordinary requests): they scan every space or
// every template of one, which takes minutes on large data sets (50,000 templates: about 3).
const adminWriteTimeout = 30 * time.Minute

// extendWriteDeadline lets the answer to an admin route be written within adminWriteTimeout.
// Past the server's write deadline the client would get an empty reply though the work is done.
func extendWriteDeadline(w http.ResponseWriter) {
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(adminWriteTimeout))
}

// handleTemplatesMigrate runs the migration; dryRun defaults to true (the safe choice).
func handleTemplatesMigrate(svc *templates.Service) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := queryValues(r)
		dry, err := queryBool(q, "dryRun", true)
		if err == nil {
			err = onlyQuery(q, "dryRun")
		}
		if err != nil {
			writeError(w, r, err)
			return
		}
		extendWriteDeadline(w)
		rep, err := svc.Migrate(r.Context(), templates.MigrateOptions{DryRun: dry})
		if err != nil {
			writeError(w, r, err)
			return
		}
		respond(w, r, http.StatusOK, rep)
	})
}

// handleTemplatesCleanup deletes the space's verified copies; dryRun defaults to false.
func handleTemplatesCleanup(svc *templates.Service) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := queryValues(r)
		dry, err := queryBool(q, "dryRun", false)
		if err == nil {
			err = onlyQuery(q, "dryRun")
		}
		if err != nil {
			writeError(w, r, err)
			return
		}
		extendWriteDeadline(w)
		rep, err := svc.Cleanup(r.Context(), templates.CleanupOptions{SpaceID: r.PathValue("spaceId"), DryRun: dry})
		if err != nil {
			writeError(w, r, err)
			return
		}
		respond(w, r, http.StatusOK, rep)
	})
}

func decodeTemplate(w http.ResponseWriter, r *http.Request) (templates.Input, error) {
	fields, err := decodeFields(w, r)
	if err != nil {
		return templates.Input{}, err
	}
	return templates.DecodeInput(fields)
}

// queryValues parses r's query string strictly as written: pairs are separated by "&" alone and
// each name and value is percent-decoded, a malformed escape being kept as it is. net/http's
// own parser (r.URL.Query) drops without a word a pair that holds ";" or a malformed escape, so
// that "?dryRun=true;" read as no dryRun at all and a cleanup ran for real; here such a pair
// reaches the checks below, which refuse it by name.
func queryValues(r *http.Request) url.Values {
	q := url.Values{}
	for pair := range strings.SplitSeq(r.URL.RawQuery, "&") {
		if pair == "" {
			continue
		}
		k, v, _ := strings.Cut(pair, "=")
		k = unescapeQuery(k)
		q[k] = append(q[k], unescapeQuery(v))
	}
	return q
}

// unescapeQuery percent-decodes s ("+" is a space), or returns it as written when it holds a
// malformed escape.
func unescapeQuery(s string) string {
	if u, err := url.QueryUnescape(s); err == nil {
		return u
	}
	return s
}

// queryBool reads the boolean query parameter name ("true"/"false", also "1"/"0"); absent gives
// def. Empty ("?dryRun=", or a bare "?dryRun", which reads as a request for a dry run) or given
// more than once, even with equal values, it is refused: on a route that deletes, what the
// caller meant must not be a guess.
func queryBool(q url.Values, name string, def bool) (bool, error) {
	vs, ok := q[name]
	switch {
	case !ok:
		return def, nil
	case len(vs) != 1 || vs[0] == "":
		return false, apperr.Validation(validate.IsBoolean(name))
	}
	b, err := strconv.ParseBool(vs[0])
	if err != nil {
		return false, apperr.Validation(validate.IsBoolean(name))
	}
	return b, nil
}

// onlyQuery refuses, naming each, the query parameters of q that are not in allowed: on a route
// that writes, a misspelt parameter (dryrun for dryRun) must not be ignored.
func onlyQuery(q url.Values, allowed ...string) error {
	var msgs []string
	for name := range q {
		if !slices.Contains(allowed, name) {
			msgs = append(msgs, validate.NotAllowed(name))
		}
	}
	if len(msgs) == 0 {
		return nil
	}
	slices.Sort(msgs)
	return apperr.Validation(msgs...)
}
