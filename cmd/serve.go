package cmd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"

	"github.com/acme/app/internal/admin"
	"github.com/acme/app/internal/config"
	"github.com/acme/app/internal/console"
	"github.com/acme/app/internal/httpapi"
	"github.com/acme/app/internal/metrics"
	"github.com/acme/app/internal/version"
)

func newServeCmd(f *factory) *cobra.Command {
	return &cobra.Command{
		Use:         "serve",
		Short:       "Run the HTTP API (embedded MongoDB store unless --mongodb-uri is set)",
		Args:        cobra.NoArgs,
		Annotations: map[string]string{serverAnnotation: "true"},
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runServe(cmd.Context(), f)
		},
	}
}

// serveGCPercent is the garbage collector's target for `serve` when GOGC is not set. The
// server's live heap is a few MB (4–8 MB under load), so at the runtime's default (100, a 4 MB
// minimum goal) the collector ran about 25 times a second at one client and took about 12 % of
// the CPU at 32; at 200, throughput at 32 clients rose by 12 % in an interleaved run, and peak
// RSS under 1,000 concurrent streams stays under 250 MB (docs/performance.md).
const serveGCPercent = 200

// gcPercentUnlessSet sets the collector's target to percent unless the operator set GOGC, and
// returns what restores the previous one.
func gcPercentUnlessSet(percent int) (restore func()) {
	if _, set := os.LookupEnv("GOGC"); set {
		return func() {}
	}
	old := debug.SetGCPercent(percent)
	return func() { debug.SetGCPercent(old) }
}

// runServe serves until SIGINT/SIGTERM (or ctx ends), then stops accepting, lets requests in
// flight finish within the grace period, and closes the services and the store.
func runServe(ctx context.Context, f *factory) error {
	cfg := f.cfg
	defer gcPercentUnlessSet(serveGCPercent)()
	ctx, stop := f.interruptible(ctx)
	defer stop()

	started := time.Now()
	svc, err := openServer(ctx, f)
	if err != nil {
		return err
	}
	defer func() {
		if err := svc.close(); err != nil {
			f.log.Error("shutdown", "err", err)
		}
	}()

	m := svc.metrics
	handler := apiHandler(apiOptions(cfg, f.log, m), svc)

	// The metrics listener is bound first: a metrics.addr that cannot be bound stops serve
	// before the API accepts anything. From here on every return stops the metrics server.
	if cfg.Metrics.Addr != "" {
		stopMetrics, err := serveMetrics(f, cfg.Metrics.Addr, m, httpapi.HealthHandler(svc.store, svc.usage, version.Version))
		if err != nil {
			return err
		}
		defer stopMetrics()
	}
	ln, err := f.listenOn(listenerAPI, cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.Addr, err)
	}
	// Requests get a context that ends only at the hard deadline, not at the first signal, so
	// in-flight work finishes during the grace period.
	baseCtx, cancelBase := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelBase()
	handler, handlersDone := tracked(handler)
	srv := &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: cfg.Server.ReadHeaderTimeout,
		ReadTimeout:       cfg.Server.ReadTimeout,
		WriteTimeout:      cfg.Server.WriteTimeout,
		IdleTimeout:       cfg.Server.IdleTimeout,
		MaxHeaderBytes:    httpapi.HeaderReadLimit(cfg.Server.MaxHeaderBytes),
		BaseContext:       func(net.Listener) context.Context { return baseCtx },
	}
	f.log.Info("serving", "addr", ln.Addr().String(), "version", version.Version,
		"embedded_store", svc.store.Embedded(), "startup", time.Since(started).Round(time.Millisecond).String())
	onSignal := func() {
		stop()
		f.log.Info("shutting down", "grace", cfg.Server.ShutdownGrace.String())
	}
	err = serveUntilDone(ctx, f, srv, ln, onSignal, cfg.Server.ShutdownGrace, func(err error) error {
		cancelBase()
		if !errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("shutdown: %w", err)
		}
		f.log.Warn("grace period over: open requests were cut off")
		return nil
	})
	// Requests cut off at the deadline end as soon as their context does, and record what
	// they answered (a stream's usage) on their way out: the recorder closes after them.
	if !handlersDone(handlerDrain) {
		f.log.Warn("requests still running after the shutdown deadline; their usage records may be lost", "waited", handlerDrain.String())
	}
	return err
}

// handlerDrain bounds the wait for handlers after the connections were closed.
const handlerDrain = 10 * time.Second

// tracked counts h's calls in flight; done waits up to d for none to be left and reports
// whether none is. http.Server.Close returns without waiting for its handlers.
func tracked(h http.Handler) (_ http.Handler, done func(d time.Duration) bool) {
	var n atomic.Int64
	counted := func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		defer n.Add(-1)
		h.ServeHTTP(w, r)
	}
	done = func(d time.Duration) bool {
		for deadline := time.Now().Add(d); n.Load() > 0; time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				return false
			}
		}
		return true
	}
	return http.HandlerFunc(counted), done
}

// serveUntilDone serves hs on ln until ctx ends (a signal), then calls onSignal (which
// releases the signal context, so that a second signal kills the process) and shuts hs
// down within grace. When open requests outlast grace, cutOff is told the Shutdown error,
// every connection is closed and cutOff's answer is returned.
func serveUntilDone(ctx context.Context, f *factory, hs *http.Server, ln net.Listener, onSignal func(),
	grace time.Duration, cutOff func(error) error) error {
	if f.onListen != nil {
		f.onListen(ln.Addr().String())
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	onSignal()
	shutCtx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	var err error
	if serr := hs.Shutdown(shutCtx); serr != nil {
		err = cutOff(serr)
		_ = hs.Close()
	}
	<-errc
	return err
}

// apiOptions are the API's options from the configuration, as `serve` and the built-in mock
// use them; m may be nil (no metrics).
func apiOptions(cfg *config.Config, log *slog.Logger, m *metrics.Metrics) httpapi.Options {
	return httpapi.Options{
		Logger:          log,
		MaxBodyBytes:    cfg.Server.MaxBodyBytes,
		MaxAIBodyBytes:  cfg.AI.MaxBodyBytes,
		RateLimit:       cfg.RateLimit.Limit,
		RateWindow:      cfg.RateLimit.Window,
		AuthRateLimit:   cfg.RateLimit.AuthLimit,
		AuthRateWindow:  cfg.RateLimit.AuthWindow,
		TrustedProxies:  cfg.RateLimit.TrustedProxies,
		MaxHeaderBytes:  cfg.Server.MaxHeaderBytes,
		CORSOrigins:     cfg.CORS.AllowedOrigins,
		CORSCredentials: cfg.CORS.AllowCredentials,
		Metrics:         m,
		Version:         version.Version,
	}
}

// apiHandler is the API over the services.
func apiHandler(opts httpapi.Options, svc *services) http.Handler {
	opts.Memory = svc.Memory()
	var adm *admin.Service
	if svc.auth != nil && svc.budget != nil && svc.usage != nil {
		adm = admin.New(svc.auth, svc.budget, svc.usage, nil)
	}
	return httpapi.NewServer(opts, httpapi.Deps{
		DB:        svc.store,
		Tokens:    svc.tokens,
		Auth:      svc.auth,
		Templates: svc.templates,
		DBCheck:   svc.dbcheck,
		AI:        svc.ai,
		Usage:     svc.usage,
		Keys:      svc.keys,
		Budget:    svc.budget,
		Gateway:   svc.gateway,
		Admin:     adm,
		Console:   console.New(),
	})
}

// Names of serve's listeners, as factory.listen is told them.
const (
	listenerAPI     = "api"
	listenerMetrics = "metrics"
)

// listenOn opens serve's listener name on addr (TCP), through factory.listen when set.
func (f *factory) listenOn(name, addr string) (net.Listener, error) {
	if f.listen != nil {
		return f.listen(name, addr)
	}
	return net.Listen("tcp", addr)
}

// serveMetrics serves /metrics on its own listener at addr, so that the metrics are never
// exposed on the API's public port by accident, and health, the API's health answer without
// its rate limit, at /api/health for probes. The returned func stops it and returns once
// its listener is closed. Should the listener fail while serving, the failure is logged and the
// API goes on: metrics observe the service, they are not part of it (a scrape fails, which is
// what a scraper alerts on).
func serveMetrics(f *factory, addr string, m *metrics.Metrics, health http.Handler) (func(), error) {
	ln, err := f.listenOn(listenerMetrics, addr)
	if err != nil {
		return nil, fmt.Errorf("metrics: listen on %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", m.Handler())
	mux.Handle("GET /api/health", health)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 120 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			f.log.Error("metrics listener failed: /metrics is no longer served; the API goes on serving",
				"addr", ln.Addr().String(), "err", err)
		}
	}()
	f.log.Info("serving metrics", "addr", ln.Addr().String(), "path", "/metrics")
	return func() {
		_ = srv.Close()
		<-done
	}, nil
}
