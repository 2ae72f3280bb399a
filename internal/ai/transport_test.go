package ai_test

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/acme/app/internal/ai"
	"github.com/acme/app/internal/apperr"
	"github.com/acme/app/internal/usage"
)

// refusedAddr is a loopback address nothing listens on.
func refusedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// silentAddr is a loopback address that accepts connections and never says anything.
func silentAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		var conns []net.Conn
		defer func() {
			for _, c := range conns {
				c.Close()
			}
		}()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	return ln.Addr().String()
}

// Ensure a provider that cannot be reached is reported by what failed: an untrusted or
// mismatched TLS certificate, a server that refuses the handshake or does not speak TLS, a failed DNS lookup, a refused
// connection, a TLS handshake that never ends, a proxy that refuses, each without the URL; the
// client's answer stays a 502 Upstream failure, and errors.As still reaches the cause.
func TestComplete_TransportFailuresSayWhatFailed(t *testing.T) {
	t.Parallel()
	tlsSrv := httptest.NewUnstartedServer(http.NotFoundHandler())
	tlsSrv.Config.ErrorLog = log.New(io.Discard, "", 0) // the handshakes it refuses are the test
	tlsSrv.StartTLS()
	t.Cleanup(tlsSrv.Close)
	trusting := ai.NewTransport(0) // trusts tlsSrv's certificate, as for a proxy's CA installed
	trusting.TLSClientConfig = tlsSrv.Client().Transport.(*http.Transport).TLSClientConfig.Clone()
	trusting.TLSClientConfig.MinVersion = tls.VersionTLS12
	certSrv := httptest.NewUnstartedServer(http.NotFoundHandler()) // wants a client certificate
	certSrv.Config.ErrorLog = log.New(io.Discard, "", 0)
	certSrv.TLS = &tls.Config{ClientAuth: tls.RequireAnyClientCert}
	certSrv.StartTLS()
	t.Cleanup(certSrv.Close)
	trustingCertSrv := ai.NewTransport(0)
	trustingCertSrv.TLSClientConfig = certSrv.Client().Transport.(*http.Transport).TLSClientConfig.Clone()
	// TLS 1.2: the refusal ends the handshake itself. Under TLS 1.3 the client's handshake
	// completes first and the refusal comes with the first read, worded by whichever of
	// net/http's loops reads it.
	trustingCertSrv.TLSClientConfig.MaxVersion = tls.VersionTLS12
	plainSrv := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(plainSrv.Close)
	_, tlsPort, _ := net.SplitHostPort(strings.TrimPrefix(tlsSrv.URL, "https://"))
	shortHandshake := ai.NewTransport(0)
	shortHandshake.TLSHandshakeTimeout = 100 * time.Millisecond
	viaProxy := ai.NewTransport(0)
	proxyURL := &url.URL{Scheme: "http", Host: refusedAddr(t)}
	viaProxy.Proxy = http.ProxyURL(proxyURL)

	for _, tc := range []struct {
		name      string
		baseURL   string
		transport http.RoundTripper // nil: the service's own
		want      string            // the start of the reason, after "connection failed: "
		cause     func(error) bool  // what errors.As/Is must still find
	}{
		{"unknown authority", tlsSrv.URL + "/v1", nil, "TLS certificate signed by an unknown authority",
			func(err error) bool { var e *tls.CertificateVerificationError; return errors.As(err, &e) }},
		{"hostname mismatch", "https://localhost:" + tlsPort + "/v1", trusting, "TLS certificate not valid for the host: certificate is valid for",
			func(err error) bool { var e *tls.CertificateVerificationError; return errors.As(err, &e) }},
		{"the server refuses the handshake", certSrv.URL + "/v1", trustingCertSrv, "TLS handshake failed: remote error: tls: ",
			func(err error) bool { var e *net.OpError; return errors.As(err, &e) }},
		{"plain HTTP server", "https://" + strings.TrimPrefix(plainSrv.URL, "http://") + "/v1", nil,
			"TLS handshake failed: the server does not speak TLS", func(err error) bool { return errors.Is(err, http.ErrSchemeMismatch) }},
		{"DNS", "http://nowhere.invalid/v1", nil, "DNS lookup of nowhere.invalid ",
			func(err error) bool { var e *net.DNSError; return errors.As(err, &e) }},
		{"refused", "http://" + refusedAddr(t) + "/v1", nil, "connection refused",
			func(err error) bool { var e *net.OpError; return errors.As(err, &e) }},
		{"TLS handshake timeout", "https://" + silentAddr(t) + "/v1", shortHandshake, "TLS handshake timeout",
			func(err error) bool { var e net.Error; return errors.As(err, &e) && e.Timeout() }},
		{"proxy refuses", "http://provider.example/v1", viaProxy, "the proxy (HTTPS_PROXY or HTTP_PROXY): connection refused",
			func(err error) bool { var e *net.OpError; return errors.As(err, &e) && e.Op == "proxyconnect" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rec := &memRecorder{}
			svc := ai.New(ai.Options{
				Providers:  map[string]ai.ProviderConfig{"openai": {APIKey: testKey, BaseURL: tc.baseURL, DefaultModel: "m"}},
				Timeout:    10 * time.Second,
				MaxRetries: -1,
				Recorder:   rec,
				Transport:  tc.transport,
			})
			_, err := svc.Complete(context.Background(), "u", "openai", input(t, `{"messages":[{"role":"user","content":"x"}]}`))
			e := apperr.As(err)
			if e == nil || e.Kind != apperr.Upstream {
				t.Fatalf("err %v (kind %v), want Upstream", err, apperr.KindOf(err))
			}
			msg := strings.Join(e.Messages, " ")
			if want := "openai could not be reached: connection failed: " + tc.want; !strings.HasPrefix(msg, want) {
				t.Errorf("message %q, want it to start with %q", msg, want)
			}
			host := strings.TrimPrefix(strings.TrimPrefix(tc.baseURL, "https://"), "http://")
			if strings.Contains(err.Error(), host) || strings.Contains(err.Error(), proxyURL.Host) {
				t.Errorf("the address is in the error: %q", err.Error())
			}
			if !tc.cause(err) {
				t.Errorf("the cause is not in the chain of %v", err)
			}
			if recs := rec.all(); len(recs) != 1 || recs[0].Status != usage.StatusError || !strings.Contains(recs[0].Error, tc.want) {
				t.Errorf("records %+v, want one error saying %q", recs, tc.want)
			}
		})
	}
}

// Ensure a request that cannot be built (a base_url net/http refuses) is an internal failure:
// nothing is sent or retried, the client sees no detail, the log (err.Error()) says what
// failed without the URL, and the builder's error stays in the chain.
func TestComplete_RequestNotBuilt(t *testing.T) {
	t.Parallel()
	rec := &memRecorder{}
	svc := ai.New(ai.Options{
		Providers: map[string]ai.ProviderConfig{"openai": {APIKey: testKey, BaseURL: "http://127.0.0.1:9/v1%zz", DefaultModel: "m"}},
		Recorder:  rec,
	})
	_, err := svc.Complete(context.Background(), "u", "openai", input(t, `{"messages":[{"role":"user","content":"x"}]}`))
	if apperr.KindOf(err) != apperr.Internal {
		t.Fatalf("err %v (kind %v), want Internal", err, apperr.KindOf(err))
	}
	if want := `openai: could not build the request: parse: invalid URL escape "%zz"`; err.Error() != want {
		t.Errorf("err.Error() = %q, want %q", err.Error(), want)
	}
	var ue *url.Error
	if !errors.As(err, &ue) {
		t.Errorf("the builder's *url.Error is not in the chain of %v", err)
	}
	if recs := rec.all(); len(recs) != 1 || recs[0].Attempts != 1 || recs[0].Status != usage.StatusError {
		t.Errorf("records %+v, want one failed attempt", recs)
	}
}
