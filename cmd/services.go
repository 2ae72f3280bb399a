package cmd

import (
	"context"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/mongo"

	"github.com/acme/app/internal/ai"
	"github.com/acme/app/internal/auth"
	"github.com/acme/app/internal/budget"
	"github.com/acme/app/internal/config"
	"github.com/acme/app/internal/dbcheck"
	"github.com/acme/app/internal/gateway"
	"github.com/acme/app/internal/keys"
	"github.com/acme/app/internal/metrics"
	"github.com/acme/app/internal/store"
	"github.com/acme/app/internal/templates"
	"github.com/acme/app/internal/usage"
)

// services is the graph of services every command group shares, opened once per command.
type services struct {
	store     *store.Store
	tokens    *auth.Tokens
	auth      *auth.Service
	templates *templates.Service
	// dbcheck serves /api/storage/mongodb/*: reach control and refused options on.
	dbcheck *dbcheck.Service
	usage   *usage.Service
	ai      *ai.Service
	// metrics are the Prometheus metrics the services report to; `serve` exposes them.
	metrics *metrics.Metrics
	keys    *keys.Service
	budget  *budget.Service
	gateway *gateway.Service
	// closers run in reverse order on close (services that flush before the store closes).
	closers []func(context.Context) error
}

// openStore opens the application's store (mongodb.uri, else the embedded one).
func openStore(ctx context.Context, f *factory, exclusive bool) (*store.Store, error) {
	return store.Open(ctx, store.Options{URI: f.cfg.MongoDB.URI, DataDir: f.cfg.DataDir, Shared: !exclusive, Logger: f.log})
}

// openServices opens the store and builds every service on it. exclusive is set by `serve`:
// it must own the embedded store; operator commands may share a running server's store.
func openServices(ctx context.Context, f *factory, exclusive bool) (*services, error) {
	cfg := f.cfg
	st, err := openStore(ctx, f, exclusive)
	if err != nil {
		return nil, err
	}
	s := &services{store: st}
	s.closers = append(s.closers, st.Close)

	secret := []byte(cfg.JWT.Secret)
	if len(secret) == 0 {
		var created bool
		secret, created, err = auth.LoadOrCreateSecret(cfg.DataDir)
		if err != nil {
			_ = s.close()
			return nil, err
		}
		if created || exclusive {
			f.log.Warn("jwt.secret is not set: using the secret generated in the data directory; set APP_JWT_SECRET (the same on every replica) in production",
				"file", auth.SecretFile)
		}
	}
	s.tokens = auth.NewTokens(secret, cfg.JWT.TTL)
	appDB := st.DB(cfg.MongoDB.Database)
	if s.auth, err = auth.New(ctx, appDB, s.tokens, cfg.Auth.BcryptCost); err != nil {
		_ = s.close()
		return nil, err
	}
	s.auth.AddRoles(cfg.Auth.Roles...)
	if exclusive {
		if err := s.auth.EnsureIndexes(ctx); err != nil {
			_ = s.close()
			return nil, err
		}
	}

	var closeCore func(context.Context) error
	if s.templates, closeCore, err = newTemplatesService(ctx, cfg, st, f.log); err != nil {
		_ = s.close()
		return nil, err
	}
	s.closers = append(s.closers, closeCore)
	if exclusive {
		if err := s.templates.EnsureIndexes(ctx); err != nil {
			f.log.Warn("templates: core indexes not created", "err", err)
		}
	}

	if s.dbcheck, err = dbcheck.New(dbcheckOptions(cfg, f.log, false)); err != nil {
		_ = s.close()
		return nil, usageError{err}
	}
	s.closers = append(s.closers, s.dbcheck.Close)
	if err := openAI(ctx, f, s, appDB, exclusive); err != nil {
		_ = s.close()
		return nil, err
	}
	return s, nil
}

// openAI builds the usage recorder (closed before the store, so it flushes) and the AI proxy.
func openAI(ctx context.Context, f *factory, s *services, db *mongo.Database, exclusive bool) error {
	cfg := f.cfg
	s.metrics = metrics.New()
	us := usage.New(db, usage.Options{Logger: f.log, Recorder: usage.RecorderOptions{Observer: s.metrics}})
	s.usage = us
	s.closers = append(s.closers, us.Close)
	s.metrics.SetUsageSource(func() metrics.UsageStats {
		st := us.RecorderState()
		return metrics.UsageStats{QueueDepth: st.Queued + st.Overflow}
	})
	prices, err := ai.LoadPrices(cfg.AI.PricingFile, f.log)
	if err != nil {
		return err
	}
	s.metrics.SetKnownModels(func(provider, model string) (string, bool) {
		name, _, ok := prices.Lookup(provider, model)
		return name, ok
	})
	s.keys = keys.New(db, keys.Options{})
	// `serve` on the embedded store it owns is the only process making AI calls on it: its
	// budgets live in memory, starting from the usage log, which an unclean stop of the last
	// owner may have left ahead of the rollup.
	inMemory := exclusive && s.store.Embedded()
	if inMemory && s.store.UncleanStop() {
		res, err := us.Reconcile(ctx, 2)
		if err != nil {
			return fmt.Errorf("rebuild the usage rollup after an unclean stop: %w", err)
		}
		f.log.Warn("the last run stopped uncleanly: usage rollup of the last 2 days rebuilt from the request log",
			"days_changed", len(res.Changes))
	}
	s.budget, err = budget.New(ctx, db, budget.Options{
		Default: cfg.AI.DefaultMonthlyBudget,
		// Held past the longest call or stream the AI service allows, then presumed dead.
		HoldFor: max(2*cfg.AI.Timeout, cfg.AI.StreamMaxDuration) + time.Minute,
		Spent: func(ctx context.Context, userID string, days int) (float64, error) {
			return monthCost(ctx, us, userID, days)
		},
		InMemory: inMemory,
		Month:    us.CostByUser,
		Logger:   f.log,
	})
	if err != nil {
		return err
	}
	s.closers = append(s.closers, s.budget.Close)
	if exclusive {
		for _, ensure := range []func(context.Context) error{us.EnsureIndexes, s.keys.EnsureIndexes, s.budget.EnsureIndexes} {
			if err := ensure(ctx); err != nil {
				return err
			}
		}
	}
	// A limit set by an operator command takes effect before that command reports it done.
	s.store.OnWrite(db.Name(), budget.Collection, s.budget.LimitsChanged)
	s.ai = ai.New(ai.Options{
		Providers: map[string]ai.ProviderConfig{
			"openai":    ai.ProviderConfig(cfg.AI.OpenAI),
			"anthropic": ai.ProviderConfig(cfg.AI.Anthropic),
			"gemini":    ai.ProviderConfig(cfg.AI.Gemini),
		},
		Timeout:  cfg.AI.Timeout,
		Prices:   prices,
		Recorder: us,
		Observer: s.metrics,
		Budget:   aiBudget{s.budget},
		Logger:   f.log,

		StreamIdleTimeout:   cfg.AI.StreamIdleTimeout,
		StreamMaxDuration:   cfg.AI.StreamMaxDuration,
		MaxIdleConnsPerHost: cfg.AI.MaxIdleConnsPerHost,
	})
	configured := map[string]string{}
	for name, p := range map[string]config.Provider{"openai": cfg.AI.OpenAI, "anthropic": cfg.AI.Anthropic, "gemini": cfg.AI.Gemini} {
		if p.APIKey != "" {
			configured[name] = p.DefaultModel
		}
	}
	s.gateway = gateway.New(gateway.Options{AI: s.ai, Prices: prices, Providers: configured})
	return nil
}

// monthCost is a user's recorded AI cost over the last days UTC days.
func monthCost(ctx context.Context, us *usage.Service, userID string, days int) (float64, error) {
	sum, err := us.Summary(ctx, userID, days)
	return sum.TotalCost, err
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

// close releases everything in reverse order of opening.
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

// withServices opens the services for an operator command (sharing the embedded store of a
// running `serve` on the same data directory), runs fn and closes them.
func withServices(ctx context.Context, f *factory, fn func(*services) error) error {
	svc, err := openServices(ctx, f, false)
	if err != nil {
		return err
	}
	defer svc.close()
	return fn(svc)
}
