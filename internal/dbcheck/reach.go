package dbcheck

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"path"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/acme/app/internal/apperr"
)

// allowSetting names the setting that lets a refused target through, for error messages.
const allowSetting = "dbcheck.allowed_hosts (APP_DBCHECK_ALLOWED_HOSTS)"

// policy decides which targets a caller-supplied connection string may reach. The zero value
// (unrestricted=false, no rules) refuses every non-public address.
type policy struct {
	unrestricted bool
	names        []string       // exact host names and globs, lower case
	prefixes     []netip.Prefix // CIDRs and single addresses
}

// CheckAllowedHosts reports the first entry of dbcheck.allowed_hosts that is neither a host
// name, a glob, an address nor a CIDR, so that a bad list stops the program before it opens
// anything.
func CheckAllowedHosts(allowed []string) error {
	_, err := newPolicy(allowed, false)
	return err
}

// newPolicy parses dbcheck.allowed_hosts: host names, globs ("*.db.internal") and CIDRs or
// addresses ("10.0.0.0/8", "127.0.0.1", "::1").
func newPolicy(allowed []string, unrestricted bool) (*policy, error) {
	p := &policy{unrestricted: unrestricted}
	for _, raw := range allowed {
		s := strings.ToLower(strings.TrimSpace(raw))
		s = strings.TrimSuffix(strings.TrimPrefix(s, "["), "]")
		switch {
		case s == "":
		case strings.Contains(s, "/"):
			pfx, err := netip.ParsePrefix(s)
			if err != nil {
				return nil, fmt.Errorf("%q is not a valid CIDR", raw)
			}
			p.prefixes = append(p.prefixes, pfx.Masked())
		default:
			if a, err := netip.ParseAddr(s); err == nil {
				a = a.Unmap()
				p.prefixes = append(p.prefixes, netip.PrefixFrom(a, a.BitLen()))
				continue
			}
			if _, err := path.Match(s, ""); err != nil {
				return nil, fmt.Errorf("%q is not a valid host name or glob", raw)
			}
			p.names = append(p.names, s)
		}
	}
	return p, nil
}

// hostAllowed reports whether host (a name or an address literal) is listed in allowed_hosts.
func (p *policy) hostAllowed(host string) bool {
	if p.unrestricted {
		return true
	}
	h := strings.ToLower(strings.TrimSuffix(strings.Trim(host, "[]"), "."))
	if a, err := netip.ParseAddr(h); err == nil {
		return p.addrListed(a.Unmap())
	}
	for _, pattern := range p.names {
		if ok, _ := path.Match(pattern, h); ok {
			return true
		}
	}
	return false
}

func (p *policy) addrListed(a netip.Addr) bool {
	for _, pfx := range p.prefixes {
		if pfx.Contains(a) {
			return true
		}
	}
	return false
}

// addrRefusal returns why a may not be reached ("" when it may): an address that is not
// public is refused unless allowed_hosts lists it.
func (p *policy) addrRefusal(a netip.Addr) string {
	if p.unrestricted {
		return ""
	}
	a = a.Unmap()
	if p.addrListed(a) {
		return ""
	}
	return nonPublic(a)
}

var (
	cgnat       = netip.MustParsePrefix("100.64.0.0/10")
	thisNetwork = netip.MustParsePrefix("0.0.0.0/8")
	ietf        = netip.MustParsePrefix("192.0.0.0/24")
	benchmark   = netip.MustParsePrefix("198.18.0.0/15")
	reserved4   = netip.MustParsePrefix("240.0.0.0/4")
	nat64       = netip.MustParsePrefix("64:ff9b::/96")
	nat64Local  = netip.MustParsePrefix("64:ff9b:1::/48") // local-use NAT64 (RFC 8215): never global
	sixToFour   = netip.MustParsePrefix("2002::/16")
	teredo      = netip.MustParsePrefix("2001::/32")
	siteLocal   = netip.MustParsePrefix("fec0::/10")       // deprecated site-local (RFC 3879)
	v4Compat    = netip.MustParsePrefix("::/96")           // deprecated IPv4-compatible (::a.b.c.d)
	v4Trans     = netip.MustParsePrefix("::ffff:0:0:0/96") // IPv4-translated (RFC 2765)
)

// embedded4 returns the IPv4 address held in bytes [i, i+4) of a's 16 bytes, XORed with x.
func embedded4(a netip.Addr, i int, x byte) netip.Addr {
	b := a.As16()
	return netip.AddrFrom4([4]byte{b[i] ^ x, b[i+1] ^ x, b[i+2] ^ x, b[i+3] ^ x})
}

// nonPublic names the class of a when it is not a public unicast address, else "".
func nonPublic(a netip.Addr) string {
	a = a.Unmap()
	switch {
	case !a.IsValid():
		return "invalid"
	case a.IsLoopback():
		return "loopback"
	case a.IsUnspecified() || thisNetwork.Contains(a):
		return "unspecified"
	case a.IsPrivate():
		return "private"
	case a.IsLinkLocalUnicast():
		return "link-local"
	case a.IsMulticast():
		return "multicast"
	case cgnat.Contains(a):
		return "shared (carrier-grade NAT)"
	case ietf.Contains(a) || benchmark.Contains(a) || reserved4.Contains(a):
		return "reserved"
	case siteLocal.Contains(a):
		return "site-local"
	case nat64Local.Contains(a):
		return "local-use NAT64"
	case nat64.Contains(a), v4Compat.Contains(a), v4Trans.Contains(a):
		// An IPv4 address in the last 32 bits: NAT64, IPv4-compatible (::127.0.0.1),
		// IPv4-translated (::ffff:0:127.0.0.1).
		return nonPublic(embedded4(a, 12, 0))
	case sixToFour.Contains(a):
		return nonPublic(embedded4(a, 2, 0))
	case teredo.Contains(a):
		// Teredo: the server's IPv4 address in bits 32-63, the client's, inverted, in the last 32.
		if why := nonPublic(embedded4(a, 4, 0)); why != "" {
			return why
		}
		return nonPublic(embedded4(a, 12, 0xff))
	}
	return ""
}

// BlockedError is a target refused by reach control.
type BlockedError struct {
	Host   string // as written in the connection string (or an SRV target)
	Addr   string // the address it resolved to, when known
	Reason string // loopback, private, link-local, …
}

func (e *BlockedError) Error() string {
	if e.Addr != "" && e.Addr != strings.Trim(e.Host, "[]") {
		return fmt.Sprintf("connecting to %s is not allowed: it resolves to %s, a %s address; list the host in %s to allow it",
			e.Host, e.Addr, e.Reason, allowSetting)
	}
	return fmt.Sprintf("connecting to %s is not allowed: it is a %s address; list the host in %s to allow it",
		e.Host, e.Reason, allowSetting)
}

func forbidden(b *BlockedError) error {
	return apperr.Wrap(apperr.Forbidden, b, b.Error())
}

// maxHosts bounds the servers one connection string may reach: those it names and those the
// servers name in turn (a replica set's members). Without it, one call listing, or one server
// answering, a thousand hosts opened a thousand connections.
const maxHosts = 16

// maxReply bounds what a connection reads after each write: one server reply. A MongoDB
// server sends at most 16 MiB of documents in a reply; the rest is room for its envelope and
// TLS. The driver would take up to what the server itself announces (2 GiB from a hostile
// one) into memory.
const maxReply = 17 << 20

// errReplyTooLarge is the failure of a connection whose server sent more than maxReply.
var errReplyTooLarge = fmt.Errorf("the server sent a reply over %d MiB", maxReply>>20)

// dialer is the driver's dialer for one client. It checks the address each connection is
// actually made to (after DNS, SRV and any rebinding) against the policy, bounds the distinct
// addresses it connects to and what each connection reads, and remembers the last refusal so
// that a failed operation can be answered 403 or 400 rather than "unreachable".
type dialer struct {
	policy   *policy
	timeout  time.Duration
	maxHosts int // 0: any number
	blocked  atomic.Pointer[BlockedError]
	tooMany  atomic.Bool

	mu    sync.Mutex
	hosts map[string]bool // the addresses dialed
}

// refusal is the answer to an operation that failed because the dialer refused a
// connection: reach control's 403, or the 400 of too many hosts; nil otherwise.
func (d *dialer) refusal() error {
	if b := d.blocked.Load(); b != nil {
		return forbidden(b)
	}
	if d.tooMany.Load() {
		return apperr.Validation(fmt.Sprintf("the servers of this connection string name more than %d hosts", d.maxHosts))
	}
	return nil
}

// admit reports whether address may be dialed under maxHosts.
func (d *dialer) admit(address string) bool {
	if d.maxHosts == 0 {
		return true
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.hosts[address] {
		if len(d.hosts) >= d.maxHosts {
			d.tooMany.Store(true)
			return false
		}
		if d.hosts == nil {
			d.hosts = map[string]bool{}
		}
		d.hosts[address] = true
	}
	return true
}

func (d *dialer) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	c, err := d.dial(ctx, network, address)
	if err != nil {
		return nil, err
	}
	return &replyBound{Conn: c}, nil
}

// replyBound is a connection that fails a read once more than maxReply bytes have come since
// the last write.
type replyBound struct {
	net.Conn
	read int
}

func (c *replyBound) Write(p []byte) (int, error) {
	c.read = 0
	return c.Conn.Write(p)
}

func (c *replyBound) Read(p []byte) (int, error) {
	if c.read >= maxReply {
		return 0, errReplyTooLarge
	}
	n, err := c.Conn.Read(p[:min(len(p), maxReply-c.read)])
	c.read += n
	return n, err
}

func (d *dialer) dial(ctx context.Context, network, address string) (net.Conn, error) {
	if !d.admit(address) {
		return nil, fmt.Errorf("dial %s: over the %d hosts one connection string may reach", address, d.maxHosts)
	}
	nd := net.Dialer{Timeout: d.timeout, KeepAlive: 5 * time.Minute}
	if network == "unix" {
		if d.policy.unrestricted {
			return nd.DialContext(ctx, network, address)
		}
		b := &BlockedError{Host: address, Reason: "local (unix socket)"}
		d.blocked.Store(b)
		return nil, b
	}
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		host = address
	}
	if !d.policy.hostAllowed(host) {
		nd.Control = func(_, addr string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(addr)
			if err != nil {
				b := &BlockedError{Host: host, Addr: addr, Reason: "unparsable"}
				d.blocked.Store(b)
				return b
			}
			if why := d.policy.addrRefusal(ap.Addr()); why != "" {
				b := &BlockedError{Host: host, Addr: ap.Addr().Unmap().String(), Reason: why}
				d.blocked.Store(b)
				return b
			}
			return nil
		}
	}
	return nd.DialContext(ctx, network, address)
}

// precheck resolves the hosts of a new connection string and refuses it at once when one of
// them is not allowed, so that the common case answers 403 without waiting for server
// selection. The dialer remains the enforcement point (rebinding, later DNS answers).
func (p *policy) precheck(ctx context.Context, hosts []string) error {
	if p.unrestricted {
		return nil
	}
	for _, hp := range hosts {
		if strings.HasSuffix(hp, ".sock") {
			return forbidden(&BlockedError{Host: hp, Reason: "local (unix socket)"})
		}
		host, _, err := net.SplitHostPort(hp)
		if err != nil {
			host = hp
		}
		if p.hostAllowed(host) {
			continue
		}
		if a, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
			if why := p.addrRefusal(a); why != "" {
				return forbidden(&BlockedError{Host: host, Addr: a.Unmap().String(), Reason: why})
			}
			continue
		}
		lctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		addrs, err := net.DefaultResolver.LookupNetIP(lctx, "ip", host)
		cancel()
		if err != nil {
			continue // the driver reports the failure to resolve as the test result
		}
		for _, a := range addrs {
			if why := p.addrRefusal(a); why != "" {
				return forbidden(&BlockedError{Host: host, Addr: a.Unmap().String(), Reason: why})
			}
		}
	}
	return nil
}
