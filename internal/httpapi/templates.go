package httpapi

import (
	"net/http"
	"slices"
	"strconv"
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
		ts, src, err := svc.List(r.Context(), r.PathValue("spaceId"), r.URL.Query().Get("widgetType"))
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
		dry, err := queryBool(r, "dryRun", true)
		if err == nil {
			err = onlyQuery(r, "dryRun")
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
		dry, err := queryBool(r, "dryRun", false)
		if err == nil {
			err = onlyQuery(r, "dryRun")
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

// queryBool reads a boolean query parameter ("true"/"false", also "1"/"0"); absent or empty
// gives def.
func queryBool(r *http.Request, name string, def bool) (bool, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return def, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, apperr.Validation(validate.IsBoolean(name))
	}
	return b, nil
}

// onlyQuery refuses, naming each, the query parameters of r that are not in allowed: on a route
// that writes, a misspelt parameter (dryrun for dryRun) must not be ignored.
func onlyQuery(r *http.Request, allowed ...string) error {
	var msgs []string
	for name := range r.URL.Query() {
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
