package dbcheck_test

import (
	"net"
	"testing"

	"go.mongodb.org/mongo-driver/x/mongo/driver/dns"

	"github.com/acme/app/internal/store/storetest"
)

// TestMain removes the embedded store's files when the tests end. No test looks up DNS: every
// SRV and TXT lookup of a mongodb+srv:// string finds no such host.
func TestMain(m *testing.M) {
	notFound := func(name string) error { return &net.DNSError{Err: "no such host", Name: name, IsNotFound: true} }
	dns.DefaultResolver = &dns.Resolver{
		LookupSRV: func(service, proto, name string) (string, []*net.SRV, error) {
			return "", nil, notFound("_" + service + "._" + proto + "." + name)
		},
		LookupTXT: func(name string) ([]string, error) { return nil, notFound(name) },
	}
	storetest.Main(m)
}
