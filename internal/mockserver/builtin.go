package mockserver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/acme/app/internal/auth"
	"github.com/acme/app/internal/httpapi"
	"github.com/acme/app/mock"
)

// BuiltinSecret signs the built-in mock's tokens. It is fixed, so a token survives a restart
// of the mock; it is never the real server's secret.
const BuiltinSecret = "app-mock-serve-not-a-secret"

// builtinTTL is the lifetime of the built-in mock's tokens.
const builtinTTL = 7 * 24 * time.Hour

// maxMockUsers bounds the users the built-in mock remembers.
const maxMockUsers = 10000

// backend is the state of the built-in /api mock: users registered through it and the
// templates created through it, in memory only.
type backend struct {
	version string
	tokens  *auth.Tokens
	gen     *mock.Generator

	mu    sync.Mutex
	users map[string]mockUser // by e-mail
	tpl   *templateStore
	usage usageLog
}

type mockUser struct {
	view     auth.UserView
	password string
}

// Builtin returns the built-in mock of this project's own /api: every endpoint, answering the
// service packages' contract types with generated data, the same error envelope and the same
// validation messages as `app serve`.
func Builtin(version string) *Set {
	b := &backend{
		version: version,
		tokens:  auth.NewTokens([]byte(BuiltinSecret), builtinTTL),
		gen:     mock.NewGenerator(uint64(time.Now().UnixNano())),
		users:   map[string]mockUser{},
		tpl:     newTemplateStore(),
	}
	cfg := mock.DefaultConfig()
	cfg.DefaultHeaders = map[string]string{"Content-Type": "application/json; charset=utf-8"}
	set := &Set{Config: cfg}
	add := func(key, about string, h mock.Handler) {
		set.Routes = append(set.Routes, Route{Key: key, Source: about, Handler: h})
	}
	add("GET /api", "service banner", b.root)
	add("GET /api/health", "httpapi.Health", b.health)
	add("POST /api/auth/register", "auth.AuthResult (201), validation as auth.ParseRegister", b.register)
	add("POST /api/auth/login", "auth.AuthResult (any valid e-mail and password logs in)", b.login)
	add("GET /api/auth/profile", "auth.UserView (JWT)", b.requireAuth(b.profile))
	b.addAI(add)
	b.addUsage(add)
	b.addStorage(add)
	b.addTemplates(add)
	return set
}

// envelope is the project's error body (see internal/httpapi/respond.go).
type envelope struct {
	StatusCode int    `json:"statusCode"`
	Message    any    `json:"message"`
	Error      string `json:"error"`
}

// fail answers status in the envelope; message is a string or a []string.
func fail(status int, message any) *mock.Response {
	return &mock.Response{Status: status, Data: envelope{StatusCode: status, Message: message, Error: http.StatusText(status)}}
}

func ok(status int, v any) (*mock.Response, error) {
	return &mock.Response{Status: status, Data: v}, nil
}

// fields reads a JSON object body as the real handlers do, or answers 400.
func fields(req *mock.Request) (map[string]json.RawMessage, *mock.Response) {
	var f map[string]json.RawMessage
	if err := json.Unmarshal(req.RawBody, &f); err != nil || f == nil {
		return nil, fail(http.StatusBadRequest, "request body must be a JSON object")
	}
	return f, nil
}

type ctxCaller struct{}

// requireAuth answers 401 in the envelope unless the request carries a token of this mock.
func (b *backend) requireAuth(h mock.Handler) mock.Handler {
	return func(ctx context.Context, req *mock.Request) (*mock.Response, error) {
		scheme, token, found := strings.Cut(req.Header.Get("Authorization"), " ")
		if !found || !strings.EqualFold(scheme, "Bearer") {
			return fail(http.StatusUnauthorized, "Unauthorized"), nil
		}
		c, err := b.tokens.Verify(strings.TrimSpace(token))
		if err != nil {
			return fail(http.StatusUnauthorized, "Unauthorized"), nil
		}
		return h(context.WithValue(ctx, ctxCaller{}, c), req)
	}
}

func callerFrom(ctx context.Context) auth.Caller {
	c, _ := ctx.Value(ctxCaller{}).(auth.Caller)
	return c
}

// requireAdmin answers 403 unless the caller holds the admin role.
func (b *backend) requireAdmin(h mock.Handler) mock.Handler {
	return b.requireAuth(func(ctx context.Context, req *mock.Request) (*mock.Response, error) {
		if !callerFrom(ctx).HasRole("admin") {
			return fail(http.StatusForbidden, "Forbidden resource"), nil
		}
		return h(ctx, req)
	})
}

func (b *backend) root(context.Context, *mock.Request) (*mock.Response, error) {
	return ok(http.StatusOK, map[string]string{"message": "Backend API is running. See /api/health."})
}

func (b *backend) health(context.Context, *mock.Request) (*mock.Response, error) {
	return ok(http.StatusOK, httpapi.Health{Status: "ok", Timestamp: time.Now().UTC().Format(time.RFC3339Nano),
		Service: "backend-api", Version: b.version})
}

// objectID returns a fresh 24-hex-digit id shaped like a MongoDB ObjectId.
func objectID() string {
	var id [12]byte
	now := uint32(time.Now().Unix())
	id[0], id[1], id[2], id[3] = byte(now>>24), byte(now>>16), byte(now>>8), byte(now)
	_, _ = rand.Read(id[4:])
	return hex.EncodeToString(id[:])
}

func stamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

func (b *backend) result(u auth.UserView) (*auth.AuthResult, error) {
	tok, err := b.tokens.Issue(auth.Caller{ID: u.ID, Email: u.Email, Roles: u.Roles})
	if err != nil {
		return nil, err
	}
	return &auth.AuthResult{AccessToken: tok, User: u}, nil
}

// register validates as the real handler does and echoes the user; an e-mail registered
// before with this mock answers 409.
func (b *backend) register(_ context.Context, req *mock.Request) (*mock.Response, error) {
	f, bad := fields(req)
	if bad != nil {
		return bad, nil
	}
	in, msgs := auth.ParseRegister(f)
	if len(msgs) > 0 {
		return fail(http.StatusBadRequest, msgs), nil
	}
	email := strings.ToLower(in.Email)
	b.mu.Lock()
	if _, taken := b.users[email]; taken {
		b.mu.Unlock()
		return fail(http.StatusConflict, "User with this email already exists"), nil
	}
	u := auth.UserView{ID: objectID(), Email: email, Name: in.Name, Roles: []string{"user"}, CreatedAt: stamp(time.Now())}
	if len(b.users) < maxMockUsers {
		b.users[email] = mockUser{view: u, password: in.Password}
	}
	b.mu.Unlock()
	res, err := b.result(u)
	if err != nil {
		return nil, err
	}
	return ok(http.StatusCreated, res)
}

// login accepts any well-formed e-mail and password, so a front end needs no sign-up step;
// a user registered with this mock must give the password it registered with. An e-mail
// whose local part is "admin" gets the admin role.
func (b *backend) login(_ context.Context, req *mock.Request) (*mock.Response, error) {
	f, bad := fields(req)
	if bad != nil {
		return bad, nil
	}
	in, msgs := auth.ParseLogin(f)
	if len(msgs) > 0 {
		return fail(http.StatusBadRequest, msgs), nil
	}
	email := strings.ToLower(in.Email)
	b.mu.Lock()
	known, found := b.users[email]
	b.mu.Unlock()
	var u auth.UserView
	switch {
	case found && known.password != in.Password:
		return fail(http.StatusUnauthorized, "Invalid credentials"), nil
	case found:
		u = known.view
	default:
		u = b.invent(email)
	}
	res, err := b.result(u)
	if err != nil {
		return nil, err
	}
	return ok(http.StatusOK, res)
}

// invent makes up the user behind an e-mail this mock has not seen registered.
func (b *backend) invent(email string) auth.UserView {
	local, _, _ := strings.Cut(email, "@")
	roles := []string{"user"}
	if local == "admin" {
		roles = append(roles, "admin")
	}
	name := b.gen.Name()
	if local != "" {
		name = strings.ToUpper(local[:1]) + local[1:]
	}
	return auth.UserView{ID: objectID(), Email: email, Name: name, Roles: roles, CreatedAt: stamp(time.Now())}
}

func (b *backend) profile(ctx context.Context, _ *mock.Request) (*mock.Response, error) {
	c := callerFrom(ctx)
	b.mu.Lock()
	known, found := b.users[strings.ToLower(c.Email)]
	b.mu.Unlock()
	if found {
		return ok(http.StatusOK, known.view)
	}
	u := b.invent(c.Email)
	u.ID, u.Roles = c.ID, c.Roles
	if u.Roles == nil {
		u.Roles = []string{}
	}
	return ok(http.StatusOK, u)
}
