package dbcheck

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"

	"go.mongodb.org/mongo-driver/x/mongo/driver/connstring"

	"github.com/acme/app/internal/apperr"
	"github.com/acme/app/internal/redact"
)

// allowedMechanisms are the authentication mechanisms a caller may ask for: the ones that use
// only the credentials in the connection string. MONGODB-AWS and MONGODB-OIDC would fetch this
// server's cloud credentials (instance metadata, environment, token files) and hand them to the
// caller's server; GSSAPI would use its Kerberos tickets; MONGODB-X509 needs a local key file.
var allowedMechanisms = map[string]bool{"": true, "SCRAM-SHA-1": true, "SCRAM-SHA-256": true, "PLAIN": true}

// fileOption is a connection-string option that makes the driver read a file of this server
// (a key, a certificate, or the password of a key), named by its spellings.
type fileOption struct {
	name string
	set  func(*connstring.ConnString) bool
}

var fileOptions = []fileOption{
	{"tlsCAFile (sslCertificateAuthorityFile)", func(cs *connstring.ConnString) bool { return cs.SSLCaFileSet }},
	{"tlsCertificateKeyFile (sslClientCertificateKeyFile)", func(cs *connstring.ConnString) bool { return cs.SSLClientCertificateKeyFileSet }},
	{"tlsCertificateKeyFilePassword (sslClientCertificateKeyPassword)", func(cs *connstring.ConnString) bool { return cs.SSLClientCertificateKeyPasswordSet }},
	{"tlsCertificateFile", func(cs *connstring.ConnString) bool { return cs.SSLCertificateFileSet }},
	{"tlsPrivateKeyFile", func(cs *connstring.ConnString) bool { return cs.SSLPrivateKeyFileSet }},
}

// parsed is a connection string that passed the checks.
type parsed struct {
	cs        *connstring.ConnString
	firstHost string // as written: for clusterName when there is no replica set
}

// parseConnString parses uri (SRV and TXT lookups included) and, when restricted, refuses the
// options that make this server use its own credentials or files. The options are checked on
// the connection string as the driver parsed it, never on its text (a "?" in a password would
// hide the real query from a text scan), and before the driver validates or uses it, so no
// answer depends on which files exist. Errors are Invalid and never contain the password.
func parseConnString(uri string, restricted bool) (*parsed, error) {
	if err := redact.CheckAt(uri); err != nil {
		return nil, apperr.Validation("connectionString " + err.Error())
	}
	cs, err := connstring.Parse(uri)
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		// A mongodb+srv:// string is valid; its SRV or TXT records could not be looked up:
		// the server cannot be reached, as when it does not answer.
		return nil, &unreachable{reason: fmt.Sprintf("DNS lookup of %s failed: %s", dnsErr.Name, dnsErr.Err)}
	}
	if err != nil {
		return nil, apperr.Validation("connectionString is not a valid MongoDB connection string: " + redact.Text(err.Error(), uri))
	}
	if restricted {
		if err := refusedOptions(cs); err != nil {
			return nil, err
		}
	}
	if err := cs.Validate(); err != nil {
		return nil, apperr.Validation("connectionString is not a valid MongoDB connection string: " + redact.Text(err.Error(), uri))
	}
	return &parsed{cs: cs, firstHost: firstHost(uri)}, nil
}

// refusedOptions refuses the parsed options that would make the driver use this server's
// files or its own credentials.
func refusedOptions(cs *connstring.ConnString) error {
	if !allowedMechanisms[strings.ToUpper(cs.AuthMechanism)] {
		return mechanismRefused(cs.AuthMechanism)
	}
	if len(cs.Compressors) > 0 {
		// A compressed reply names its own size, which the driver allocates before it reads.
		return apperr.Validation("connectionString option compressors is not allowed: a compressed reply could claim any size")
	}
	var refused []string
	for _, o := range fileOptions {
		if o.set(cs) {
			refused = append(refused, o.name)
		}
	}
	if len(refused) == 0 {
		return nil
	}
	return apperr.Validation("connectionString option " + strings.Join(refused, ", ") +
		" is not allowed: it would read files of this server")
}

// firstHost returns the first host of a connection string without its port; for an SRV
// address, its first label ("cluster0" for "cluster0.ab1cd.mongodb.net").
func firstHost(uri string) string {
	scheme, rest, _ := strings.Cut(uri, "://")
	if i := strings.IndexAny(rest, "/?"); i >= 0 {
		rest = rest[:i]
	}
	if i := strings.LastIndex(rest, "@"); i >= 0 {
		rest = rest[i+1:]
	}
	host, _, _ := strings.Cut(rest, ",")
	if strings.HasPrefix(host, "[") {
		if i := strings.Index(host, "]"); i >= 0 {
			host = host[1:i]
		}
	} else if i := strings.LastIndex(host, ":"); i >= 0 {
		host = host[:i]
	}
	if u, err := url.PathUnescape(host); err == nil {
		host = u
	}
	if scheme == "mongodb+srv" {
		host, _, _ = strings.Cut(host, ".")
	}
	return host
}

func mechanismRefused(m string) error {
	return apperr.Validation("connectionString authMechanism " + m +
		" is not allowed: it would use this server's own credentials; use SCRAM-SHA-256, SCRAM-SHA-1 or PLAIN with the credentials in the connection string")
}

// unreachable is a connection string whose server cannot be found before any connection is
// tried (its DNS records could not be looked up): Test answers it as a failed test, Query as a
// server that cannot be reached.
type unreachable struct{ reason string }

func (u *unreachable) Error() string { return u.reason }
