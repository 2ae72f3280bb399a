package cmd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"go.mongodb.org/mongo-driver/mongo"

	"github.com/acme/app/internal/ai"
	"github.com/acme/app/internal/apperr"
	"github.com/acme/app/internal/auth"
	"github.com/acme/app/internal/budget"
	"github.com/acme/app/internal/config"
	"github.com/acme/app/internal/dbcheck"
	"github.com/acme/app/internal/gateway"
	"github.com/acme/app/internal/keys"
	"github.com/acme/app/internal/memlimit"
	"github.com/acme/app/internal/metrics"
	"github.com/acme/app/internal/store"
	"github.com/acme/app/internal/templates"
	"github.com/acme/app/internal/usage"
)

// services are the program's services, each built on first use together with what it depends
// on; the store is opened once, when a service first needs it. An operator command asks only
// for what it uses (s.Auth, s.Usage, …): `app usage report` opens the store and reads the
// usage rollup, and builds nothing else. `serve` builds them all at start (openServer). close
// releases what was built, in reverse order.
type services struct {
	f *factory
	// server is set for `serve` and the built-in mock, which own the embedded store: the store
	// is opened for this process alone, the services' indexes are created, the usage recorder
	// runs and reports to the metrics, and budgets live in memory on the embedded store. An
	// operator command's services create no index and start no background work.
	server bool

	store     *store.Store
	tokens    *auth.Tokens
	auth      *auth.Service
	templates *templates.Service
	// dbcheck serves /api/storage/mongodb/*: reach control and refused options on.
	dbcheck *dbcheck.Service
	usage   *usage.Service
	// metrics are the Prometheus metrics the services report to; `serve` exposes them.
	metrics *metrics.Metrics
	prices  *ai.Prices
	keys    *keys.Service
	budget  *budget.Service
	ai      *ai.Service
	gateway *gateway.Service
	// closers run in reverse order on close (services that flush before the store closes).
	closers []func(context.Context) error
	// memory bounds the request bodies and provider answers held at once
	// (server.max_buffered_bytes); made by Memory.
	memory *memlimit.Limit
}

// Memory returns the process's bound on buffered bytes, which the API reads request bodies,
// the AI service providers' answers and MongoDB query answers within; the metrics report it,
// whichever of the two is made first.
func (s *services) Memory() *memlimit.Limit {
	if s.memory == nil {
		s.memory = memlimit.New(s.f.cfg.Server.MaxBufferedBytes)
		if s.memory != nil && s.metrics != nil {
			s.metrics.SetBufferedSource(s.memory)
		}
	}
	return s.memory
}

// Names of the services as services.built reports them (factory.onBuild).
const (
	builtStore         = "store"
	builtTokens        = "tokens"
	builtAuth          = "auth"
	builtTemplates     = "templates"
	builtDBCheck       = "dbcheck"
	builtMetrics       = "metrics"
	builtUsageReader   = "usage reader"
	builtUsageRecorder = "usage recorder"
	builtPrices        = "prices"
	builtKeys          = "keys"
	builtBudgetStore   = "budget in the store"
	builtBudgetMemory  = "budget in memory"
	builtAI            = "ai"
	builtGateway       = "gateway"
)

// openServer builds every service for `serve` and the built-in mock, which own the embedded
// store, in the order they have always been opened: store, auth, templates, dbcheck, keys,
// then the AI path (metrics, usage, prices, budget, ai, gateway).
func openServer(ctx context.Context, f *factory) (*services, error) {
	s := &services{f: f, server: true}
	err := func() error {
		// The price table came with the configuration, before any store opened.
		if _, err := s.Prices(); err != nil {
			return err
		}
		if _, err := s.Auth(ctx); err != nil {
			return err
		}
		if _, err := s.Templates(ctx); err != nil {
			return err
		}
		if _, err := s.DBCheck(); err != nil {
			return err
		}
		if _, err := s.Keys(ctx); err != nil {
			return err
		}
		_, err := s.Gateway(ctx)
		return err
	}()
	if err != nil {
		_ = s.close()
		return nil, err
	}
	return s, nil
}

// withServices runs fn for an operator command with services built on first use (sharing the
// embedded store of a running `serve` on the same data directory), and closes what fn built.
func withServices(ctx context.Context, f *factory, fn func(*services) error) error {
	s := &services{f: f}
	defer s.close()
	return fn(s)
}

// built tells the factory's onBuild hook (tests) that name was built.
func (s *services) built(name string) {
	if s.f.onBuild != nil {
		s.f.onBuild(name)
	}
}

// Store opens the application's store (mongodb.uri, else the embedded one). An operator
// command may share the embedded store of a running `serve`; a server must own it.
func (s *services) Store(ctx context.Context) (*store.Store, error) {
	if s.store != nil {
		return s.store, nil
	}
	cfg := s.f.cfg
	// Opening may wait for the data directory another command holds: SIGINT or SIGTERM then
	// stops the wait as an interruption (exit 130 or 143, one line), not a failure.
	openCtx, stop := s.f.interruptible(ctx)
	st, err := store.Open(openCtx, store.Options{URI: cfg.MongoDB.URI, DataDir: cfg.DataDir, Shared: !s.server, Logger: s.f.log})
	stop()
	if err != nil {
		if apperr.KindOf(err) == apperr.Invalid { // the URI itself: a bad configuration value
			return nil, fmt.Errorf("mongodb.uri: %w", err)
		}
		return nil, err
	}
	if st.Created() && !s.server {
		// An operator command answers from the store it opened: say it is a new one, which
		// a mistyped --data-dir would otherwise hide behind empty results.
		fmt.Fprintf(s.f.stderr, "note: %s held no store: a new, empty one was created there\n", cfg.DataDir)
	}
	s.store = st
	s.closers = append(s.closers, st.Close)
	s.built(builtStore)
	return st, nil
}

// appDB is the application's database (mongodb.database) on the store.
func (s *services) appDB(ctx context.Context) (*mongo.Database, error) {
	st, err := s.Store(ctx)
	if err != nil {
		return nil, err
	}
	return st.DB(s.f.cfg.MongoDB.Database), nil
}

// Tokens returns the JWT issuer and verifier, keyed by jwt.secret or else by the secret
// generated in the data directory.
func (s *services) Tokens() (*auth.Tokens, error) {
	if s.tokens != nil {
		return s.tokens, nil
	}
	cfg := s.f.cfg
	secret := []byte(cfg.JWT.Secret)
	if len(secret) == 0 {
		var created bool
		var err error
		if secret, created, err = auth.LoadOrCreateSecret(cfg.DataDir); err != nil {
			return nil, err
		}
		if created || s.server {
			s.f.log.Warn("jwt.secret is not set: using the secret generated in the data directory; set APP_JWT_SECRET (the same on every replica) in production",
				"file", auth.SecretFile)
		}
	}
	s.tokens = auth.NewTokens(secret, cfg.JWT.TTL)
	s.built(builtTokens)
	return s.tokens, nil
}

// Auth returns the accounts service, with the roles of auth.roles.
func (s *services) Auth(ctx context.Context) (*auth.Service, error) {
	if s.auth != nil {
		return s.auth, nil
	}
	db, err := s.appDB(ctx)
	if err != nil {
		return nil, err
	}
	tokens, err := s.Tokens()
	if err != nil {
		return nil, err
	}
	a, err := auth.New(ctx, db, tokens, s.f.cfg.Auth.BcryptCost)
	if err != nil {
		return nil, err
	}
	a.AddRoles(s.f.cfg.Auth.Roles...)
	if s.server {
		if err := a.EnsureIndexes(ctx); err != nil {
			return nil, err
		}
	}
	s.auth = a
	s.built(builtAuth)
	return a, nil
}

// UserByEmail returns the account with e-mail email (NotFound when there is none), building
// the accounts service on first use: the operator commands that act for a user name it so.
func (s *services) UserByEmail(ctx context.Context, email string) (*auth.UserView, error) {
	users, err := s.Auth(ctx)
	if err != nil {
		return nil, err
	}
	return users.UserByEmail(ctx, email)
}

// Templates returns the template service (core on its own client when core.uri names
// another deployment, closed with the services).
func (s *services) Templates(ctx context.Context) (*templates.Service, error) {
	if s.templates != nil {
		return s.templates, nil
	}
	st, err := s.Store(ctx)
	if err != nil {
		return nil, err
	}
	t, closeCore, err := newTemplatesService(ctx, s.f.cfg, st, s.f.log)
	if err != nil {
		return nil, err
	}
	s.closers = append(s.closers, closeCore)
	if s.server {
		if err := t.EnsureIndexes(ctx); err != nil {
			s.f.log.Warn("templates: core indexes not created", "err", err)
		}
	}
	s.templates = t
	s.built(builtTemplates)
	return t, nil
}

// DBCheck returns the service behind /api/storage/mongodb/*, with reach control and the
// refused connection-string options (the `mongo` commands build their own, unrestricted).
func (s *services) DBCheck() (*dbcheck.Service, error) {
	if s.dbcheck != nil {
		return s.dbcheck, nil
	}
	opts := dbcheckOptions(s.f.cfg, s.f.log, false)
	opts.Memory = s.Memory() // answers are held within server.max_buffered_bytes, as bodies are
	opts.MaxConcurrent = s.f.cfg.DBCheck.MaxConcurrent
	d, err := dbcheck.New(opts)
	if err != nil {
		return nil, usageError{err}
	}
	if s.metrics != nil {
		s.metrics.SetDBCheckSource(d)
	}
	s.closers = append(s.closers, d.Close)
	s.dbcheck = d
	s.built(builtDBCheck)
	return d, nil
}

// Metrics returns the Prometheus metrics the services report to.
func (s *services) Metrics() *metrics.Metrics {
	if s.metrics == nil {
		s.metrics = metrics.New()
		if s.memory != nil { // made before the metrics (by DBCheck): reported all the same
			s.metrics.SetBufferedSource(s.memory)
		}
		if s.dbcheck != nil {
			s.metrics.SetDBCheckSource(s.dbcheck)
		}
		s.built(builtMetrics)
	}
	return s.metrics
}

// Usage returns the usage service. A server's records AI calls: its recorder runs until close,
// which flushes it before the store closes, and reports to the metrics. An operator command's
// is a reader, which starts nothing (`usage reconcile` rewrites the rollup without a
// recorder).
func (s *services) Usage(ctx context.Context) (*usage.Service, error) {
	if s.usage != nil {
		return s.usage, nil
	}
	db, err := s.appDB(ctx)
	if err != nil {
		return nil, err
	}
	opts := usage.Options{Logger: s.f.log}
	if !s.server {
		s.usage = usage.NewReader(db, opts)
		s.built(builtUsageReader)
		return s.usage, nil
	}
	m := s.Metrics()
	opts.Recorder = usage.RecorderOptions{Observer: m}
	us := usage.New(db, opts)
	s.closers = append(s.closers, us.Close)
	m.SetUsageSource(func() metrics.UsageStats {
		st := us.RecorderState()
		return metrics.UsageStats{QueueDepth: st.Queued + st.Overflow}
	})
	if err := us.EnsureIndexes(ctx); err != nil {
		return nil, err
	}
	s.usage = us
	s.built(builtUsageRecorder)
	return us, nil
}

// Prices returns the price table (ai.pricing_file, else the built-in one), loaded with the
// configuration, before any store opened.
func (s *services) Prices() (*ai.Prices, error) {
	if s.prices == nil {
		s.prices = s.f.prices
		s.built(builtPrices)
	}
	return s.prices, nil
}

// loadPrices loads the price table with file laid over it; a file that cannot be read or
// used is a configuration value the program cannot use (a *config.Error, exit 2).
func loadPrices(file string, log *slog.Logger) (*ai.Prices, error) {
	p, err := ai.LoadPrices(file, log)
	var pfe *ai.PricingFileError
	if errors.As(err, &pfe) {
		return nil, &config.Error{Key: "ai.pricing_file", Value: pfe.File, Reason: pfe.Err.Error()}
	}
	return p, err
}

// Keys returns the personal API key service.
func (s *services) Keys(ctx context.Context) (*keys.Service, error) {
	if s.keys != nil {
		return s.keys, nil
	}
	db, err := s.appDB(ctx)
	if err != nil {
		return nil, err
	}
	k := keys.New(db, keys.Options{})
	if s.server {
		if err := k.EnsureIndexes(ctx); err != nil {
			return nil, err
		}
	}
	s.keys = k
	s.built(builtKeys)
	return k, nil
}

// Budget returns the monthly budget service, which reads the month's spend from the usage
// service. A server on the embedded store it owns is the only process making AI calls on it:
// its budgets live in memory, starting from the usage log, which an unclean stop of the last
// owner may have left ahead of the rollup. Everywhere else (an operator command, replicas on
// MongoDB) budgets live in the store, and the service starts nothing.
func (s *services) Budget(ctx context.Context) (*budget.Service, error) {
	if s.budget != nil {
		return s.budget, nil
	}
	st, err := s.Store(ctx)
	if err != nil {
		return nil, err
	}
	us, err := s.Usage(ctx)
	if err != nil {
		return nil, err
	}
	cfg := s.f.cfg
	db := st.DB(cfg.MongoDB.Database)
	inMemory := s.server && st.Embedded()
	if inMemory && st.UncleanStop() {
		res, err := us.Reconcile(ctx, 2)
		if err != nil {
			return nil, fmt.Errorf("rebuild the usage rollup after an unclean stop: %w", err)
		}
		if err := st.RepairedUncleanStop(ctx); err != nil {
			return nil, err
		}
		s.f.log.Warn("the last run stopped uncleanly: usage rollup of the last 2 days rebuilt from the request log",
			"days_changed", len(res.Changes))
	}
	b, err := budget.New(ctx, db, budget.Options{
		Default: cfg.AI.DefaultMonthlyBudget,
		// Held past the longest call or stream the AI service allows, then presumed dead.
		HoldFor:  max(2*cfg.AI.Timeout, cfg.AI.StreamMaxDuration) + time.Minute,
		Spent:    us.BilledCost,
		InMemory: inMemory,
		Month: func(ctx context.Context, from, to string) (map[string]float64, error) {
			return us.CostByUser(ctx, nil, from, to) // every user's month
		},
		Logger: s.f.log,
	})
	if err != nil {
		return nil, err
	}
	s.closers = append(s.closers, b.Close)
	if s.server {
		if err := b.EnsureIndexes(ctx); err != nil {
			return nil, err
		}
	}
	// A limit set by an operator command takes effect before that command reports it done.
	st.OnWrite(db.Name(), budget.Collection, b.LimitsChanged)
	s.budget = b
	if inMemory {
		s.built(builtBudgetMemory)
	} else {
		s.built(builtBudgetStore)
	}
	return b, nil
}

// AI returns the AI proxy: the configured providers, priced by the price table (by which the
// metrics name models), recording to the usage service and held to the budgets.
func (s *services) AI(ctx context.Context) (*ai.Service, error) {
	if s.ai != nil {
		return s.ai, nil
	}
	m := s.Metrics()
	us, err := s.Usage(ctx)
	if err != nil {
		return nil, err
	}
	prices, err := s.Prices()
	if err != nil {
		return nil, err
	}
	m.SetKnownModels(func(provider, model string) (string, bool) {
		name, _, ok := prices.Lookup(provider, model)
		return name, ok
	})
	b, err := s.Budget(ctx)
	if err != nil {
		return nil, err
	}
	cfg := s.f.cfg
	pcfg := make(map[string]ai.ProviderConfig, len(cfg.AI.Providers))
	for name, p := range cfg.AI.Providers {
		pcfg[name] = ai.ProviderConfig(p)
	}
	s.ai = ai.New(ai.Options{
		Memory:    s.Memory(),
		Providers: pcfg,
		Timeout:   cfg.AI.Timeout,
		Prices:    prices,
		Recorder:  us,
		Observer:  m,
		Budget:    aiBudget{b},
		Logger:    s.f.log,

		StreamIdleTimeout:   cfg.AI.StreamIdleTimeout,
		StreamMaxDuration:   cfg.AI.StreamMaxDuration,
		MaxIdleConnsPerHost: cfg.AI.MaxIdleConnsPerHost,
	})
	s.built(builtAI)
	return s.ai, nil
}

// Gateway returns OpenAI's dialect over the AI service, routing to the providers that have
// an API key.
func (s *services) Gateway(ctx context.Context) (*gateway.Service, error) {
	if s.gateway != nil {
		return s.gateway, nil
	}
	a, err := s.AI(ctx)
	if err != nil {
		return nil, err
	}
	prices, err := s.Prices()
	if err != nil {
		return nil, err
	}
	cfg := s.f.cfg
	configured := map[string]string{}
	for name, p := range cfg.AI.Providers {
		if p.APIKey != "" {
			configured[name] = p.DefaultModel
		}
	}
	s.gateway = gateway.New(gateway.Options{AI: a, Prices: prices, Providers: configured, MaxImageBytes: cfg.AI.MaxImageBytes})
	s.built(builtGateway)
	return s.gateway, nil
}

// aiBudget is the budget service as the AI service's budget hook.
type aiBudget struct{ svc *budget.Service }

func (b aiBudget) Reserve(ctx context.Context, userID string, worstCaseUSD float64) (ai.Reservation, error) {
	r, err := b.svc.Reserve(ctx, userID, worstCaseUSD)
	if err != nil || r == nil {
		return nil, err // no budget: nothing to settle
	}
	return r, nil
}

// close releases everything built, in reverse order of building.
func (s *services) close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var first error
	for i := len(s.closers) - 1; i >= 0; i-- {
		if err := s.closers[i](ctx); err != nil && first == nil {
			first = fmt.Errorf("close: %w", err)
		}
	}
	return first
}
