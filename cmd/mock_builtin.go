package cmd

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"

	"github.com/acme/app/internal/ai/fakeprovider"
	"github.com/acme/app/internal/ai/providers"
	"github.com/acme/app/internal/config"
	"github.com/acme/app/internal/demo"
)

// builtinRateLimit is the built-in mock's request limit per client and window: high enough
// that a front end (or a load test) never meets it; the server's own limits are a
// configuration matter the mock does not imitate.
const builtinRateLimit = 1 << 30

// builtinAPI is the built-in mock's /api: the real handlers over a throwaway embedded store in
// a temporary directory, fake AI providers on loopback and the demo data set.
type builtinAPI struct {
	handler http.Handler
	svc     *services
	fakes   []*fakeprovider.Server
	dir     string
	seeded  *demo.Report
}

// openBuiltinAPI builds the built-in mock's API. The configuration is the defaults, except:
// the data directory is a new temporary directory, the JWT secret is random (tokens die with
// the process, as the data does), bcrypt runs at its cheapest cost, the rate limits are out of
// reach, and every AI provider is a fake that answers each call like the real provider.
// logRequests keeps the API's access log (--log-requests).
func openBuiltinAPI(ctx context.Context, f *factory, logRequests bool) (_ *builtinAPI, err error) {
	cfg, err := config.Load(nil, func(string) string { return "" })
	if err != nil {
		return nil, err
	}
	b := &builtinAPI{}
	defer func() {
		if err != nil {
			b.close()
		}
	}()
	if b.dir, err = os.MkdirTemp("", "app-mock-"); err != nil {
		return nil, fmt.Errorf("built-in mock: %w", err)
	}
	secret := make([]byte, 32)
	_, _ = rand.Read(secret)
	cfg.DataDir = b.dir
	cfg.JWT.Secret = hex.EncodeToString(secret)
	cfg.Auth.BcryptCost = 4
	cfg.RateLimit.Limit, cfg.RateLimit.AuthLimit = builtinRateLimit, builtinRateLimit
	for _, name := range providers.Names() {
		fake, err := fakeprovider.Start(name)
		if err != nil {
			return nil, fmt.Errorf("built-in mock: %w", err)
		}
		b.fakes = append(b.fakes, fake)
		p := cfg.AI.Providers[name]
		p.BaseURL, p.APIKey = fake.BaseURL(), "mock-"+name+"-key"
		cfg.AI.Providers[name] = p
	}
	prices, err := loadPrices(cfg.AI.PricingFile, f.log) // the built-in table
	if err != nil {
		return nil, fmt.Errorf("built-in mock: %w", err)
	}
	mf := &factory{in: f.in, out: f.out, errOut: f.errOut, getenv: f.getenv, cfg: cfg, log: f.log, prices: prices}
	if b.svc, err = openServer(ctx, mf); err != nil {
		return nil, fmt.Errorf("built-in mock: %w", err)
	}
	deps, err := demoDeps(ctx, b.svc)
	if err != nil {
		return nil, fmt.Errorf("built-in mock: %w", err)
	}
	if b.seeded, err = demo.Load(ctx, deps); err != nil {
		return nil, fmt.Errorf("built-in mock: %w", err)
	}
	opts := apiOptions(cfg, f.log, nil)
	opts.NoAccessLog = !logRequests // as the mocked routes: a line per request only when asked
	b.handler = apiHandler(opts, b.svc)
	return b, nil
}

// demoDeps are the services and databases the demo data set is written through.
func demoDeps(ctx context.Context, s *services) (demo.Deps, error) {
	a, err := s.Auth(ctx)
	if err != nil {
		return demo.Deps{}, err
	}
	t, err := s.Templates(ctx)
	if err != nil {
		return demo.Deps{}, err
	}
	st, err := s.Store(ctx)
	if err != nil {
		return demo.Deps{}, err
	}
	return demo.Deps{Auth: a, Templates: t, App: st.DB(s.f.cfg.MongoDB.Database), Spaces: st.Client()}, nil
}

// close stops the services, the store and the fakes, and removes the temporary directory.
func (b *builtinAPI) close() {
	if b.svc != nil {
		_ = b.svc.close()
	}
	for _, fake := range b.fakes {
		fake.Close()
	}
	if b.dir != "" {
		_ = os.RemoveAll(b.dir)
	}
}
