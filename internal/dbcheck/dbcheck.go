// Package dbcheck tests connections to, and reads documents from, a MongoDB named by the
// caller (the /api/storage/mongodb endpoints and the `app mongo` commands). It is not the
// program's own database: every call connects where the caller's connection string says, so
// the package guards what that may reach (reach control, refused options), what the server
// may be asked to run (no server-side JavaScript) and how much it may answer (limit, time,
// bytes), and it reuses driver clients across calls so that callers cannot cause connection
// storms.
package dbcheck

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/event"
	"go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"
	"go.mongodb.org/mongo-driver/mongo/readpref"
	"go.mongodb.org/mongo-driver/x/mongo/driver/topology"

	"github.com/acme/app/internal/apperr"
	"github.com/acme/app/internal/memlimit"
	"github.com/acme/app/internal/redact"
)

// Options configures a Service. Zero values take the defaults in parentheses.
type Options struct {
	Timeout      time.Duration // server selection and connect timeout (5s): dbcheck.timeout
	MaxTime      time.Duration // a query's maxTimeMS (10s): dbcheck.max_time
	MaxLimit     int           // largest query limit (1000): dbcheck.max_limit
	MaxBytes     int           // cap on the documents of one answer, as JSON (16 MiB): dbcheck.max_bytes
	AllowedHosts []string      // names, globs and CIDRs reachable even when not public: dbcheck.allowed_hosts

	// Secret lists the fields the API never answers and no filter may name: the app's own
	// secrets (users' password hashes, API key digests), which a caller allowed to reach the
	// app's store would otherwise read, or guess at through a filter. The operator's CLI sets
	// none.
	Secret []SecretField

	// Unrestricted turns reach control and the refused connection-string options off: the
	// operator's own CLI. The HTTP API never sets it.
	Unrestricted bool

	// Memory is the process's bound on buffered bytes (server.max_buffered_bytes), which a
	// query's answer is held within until it is written (QueryResult.Release); nil: no bound
	// (the operator's CLI).
	Memory *memlimit.Limit

	// MaxConcurrent bounds the tests and queries running at once, all callers together
	// (dbcheck.max_concurrent): past it a call is refused at once with Overloaded, never
	// queued. 0: no bound (the operator's CLI, which runs one).
	MaxConcurrent int

	CacheSize   int           // cached clients at most (32)
	IdleTimeout time.Duration // a cached client unused this long is closed (5m)
	MaxPoolSize uint64        // connections per cached client (4)

	Logger      *slog.Logger
	PoolMonitor *event.PoolMonitor // tests: observe the connections the clients open
}

// Service runs connection tests and queries against caller-supplied MongoDB servers.
type Service struct {
	opts   Options
	policy *policy
	cache  *cache
	log    *slog.Logger

	slots   chan struct{} // one per call running; nil: no bound
	refused atomic.Int64  // calls refused for want of a slot
}

// New returns a Service. It fails when AllowedHosts holds an entry that is neither a host
// name, a glob, an address nor a CIDR. Close it to disconnect the cached clients.
func New(o Options) (*Service, error) {
	if o.Timeout <= 0 {
		o.Timeout = 5 * time.Second
	}
	if o.MaxTime <= 0 {
		o.MaxTime = 10 * time.Second
	}
	if o.MaxLimit <= 0 {
		o.MaxLimit = 1000
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = 16 << 20
	}
	if o.CacheSize <= 0 {
		o.CacheSize = 32
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = 5 * time.Minute
	}
	if o.MaxPoolSize == 0 {
		o.MaxPoolSize = 4
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	p, err := newPolicy(o.AllowedHosts, o.Unrestricted)
	if err != nil {
		return nil, fmt.Errorf("dbcheck.allowed_hosts: %w", err)
	}
	s := &Service{opts: o, policy: p, cache: newCache(o.CacheSize, o.IdleTimeout), log: o.Logger.With("component", "dbcheck")}
	if o.MaxConcurrent > 0 {
		s.slots = make(chan struct{}, o.MaxConcurrent)
	}
	return s, nil
}

// Refused is the number of tests and queries refused since s was made because MaxConcurrent
// were running (app_dbcheck_refusals_total).
func (s *Service) Refused() int64 { return s.refused.Load() }

// enter takes a slot for one call, or refuses it at once when MaxConcurrent are running: the
// error is Unavailable with code Overloaded and Retry-After 1. Call the returned func to give
// the slot back.
func (s *Service) enter() (leave func(), err error) {
	if s.slots == nil {
		return func() {}, nil
	}
	select {
	case s.slots <- struct{}{}:
		return func() { <-s.slots }, nil
	default:
		s.refused.Add(1)
		e := apperr.E(apperr.Unavailable, fmt.Sprintf(
			"the server runs as many MongoDB tests and queries as it may at once (dbcheck.max_concurrent=%d): retry in a moment", s.opts.MaxConcurrent))
		e.RetryAfter, e.Code = 1, memlimit.Overloaded
		return nil, e
	}
}

// Close disconnects every cached client.
func (s *Service) Close(ctx context.Context) error { return s.cache.close(ctx) }

// TestResult is the answer of a connection test. A failed test is a result, not an error:
// Success false, Error and Latency set, the other fields empty.
type TestResult struct {
	Success     bool     `json:"success"`
	ClusterName string   `json:"clusterName,omitempty"`
	Version     string   `json:"version,omitempty"`
	Latency     float64  `json:"latency"` // milliseconds
	Databases   []string `json:"databases,omitempty"`
	Error       string   `json:"error,omitempty"`
}

// MarshalJSON always writes every field of a successful result (databases as [] when empty).
func (r TestResult) MarshalJSON() ([]byte, error) {
	if !r.Success {
		return json.Marshal(struct {
			Success bool    `json:"success"`
			Error   string  `json:"error"`
			Latency float64 `json:"latency"`
		}{false, r.Error, r.Latency})
	}
	dbs := r.Databases
	if dbs == nil {
		dbs = []string{}
	}
	return json.Marshal(struct {
		Success     bool     `json:"success"`
		ClusterName string   `json:"clusterName"`
		Version     string   `json:"version"`
		Latency     float64  `json:"latency"`
		Databases   []string `json:"databases"`
	}{true, r.ClusterName, r.Version, r.Latency, dbs})
}

// QueryResult is the answer of a query. Documents are relaxed Extended JSON objects with
// `_id` as a string. Truncated is set when the answer was cut at dbcheck.max_bytes.
type QueryResult struct {
	Success   bool              `json:"success"`
	Documents []json.RawMessage `json:"documents"`
	Count     int               `json:"count"`
	Truncated bool              `json:"truncated,omitempty"`

	// held is what the answer took from mem (Options.Memory), given back by Release.
	mem  *memlimit.Limit
	held int64
}

// Release gives back the bytes the answer holds in the process's bound on buffered bytes:
// call it once the answer is written (or dropped). Calling it again does nothing.
func (r *QueryResult) Release() {
	if r != nil {
		r.mem.Give(r.held)
		r.held = 0
	}
}

// Test connects to in.ConnectionString, pings in.Database and reports the server's version,
// cluster name, ping latency and database names.
//
// Returns Invalid for a body that fails validation, a connection string that does not parse
// or asks for a refused option; Forbidden when reach control refuses the target; Unavailable
// (code Overloaded, Retry-After 1) when MaxConcurrent tests and queries are running. A server
// that cannot be reached or refuses the credentials is a result with Success false, not an error.
func (s *Service) Test(ctx context.Context, in TestInput) (*TestResult, error) {
	if msgs := in.validate(); len(msgs) > 0 {
		return nil, apperr.Validation(msgs...)
	}
	leave, err := s.enter()
	if err != nil {
		return nil, err
	}
	defer leave()
	ctx, cancel := context.WithTimeout(ctx, 2*s.opts.Timeout+time.Second)
	defer cancel()
	started := time.Now()
	e, fresh, err := s.cache.acquire(in.ConnectionString, func() (*entry, error) { return s.connect(ctx, in.ConnectionString) })
	var u *unreachable
	if errors.As(err, &u) {
		s.log.Info("mongodb test failed", "uri", redact.URI(in.ConnectionString), "reason", u.reason)
		return &TestResult{Success: false, Error: u.reason, Latency: ms(time.Since(started))}, nil
	}
	if err != nil {
		return nil, err
	}
	defer s.cache.release(e)

	rp := options.RunCmd().SetReadPreference(readpref.PrimaryPreferred())
	db := e.client.Database(in.Database)
	ping := func() error { return db.RunCommand(ctx, bson.D{{Key: "ping", Value: 1}}, rp).Err() }
	if fresh {
		// The first ping selects the server and opens the connection; the second measures the round trip.
		if err := ping(); err != nil {
			return s.testFailure(e, in.ConnectionString, err, time.Since(started))
		}
	}
	// listDatabases runs beside the measured ping: two independent round trips, one wait.
	type listing struct {
		names []string
		err   error
	}
	listed := make(chan listing, 1)
	go func() {
		names, err := e.client.ListDatabaseNames(ctx, bson.D{}, options.ListDatabases().SetAuthorizedDatabases(true))
		listed <- listing{names, err}
	}()
	t0 := time.Now()
	err = ping()
	latency := time.Since(t0)
	l := <-listed
	if err != nil {
		return s.testFailure(e, in.ConnectionString, err, time.Since(started))
	}

	res := &TestResult{Success: true, Latency: ms(latency)}
	if info := e.info.Load(); info != nil {
		res.Version, res.ClusterName = info.version, info.clusterName
	} else {
		info, err := s.serverInfo(ctx, e)
		if err != nil {
			return s.testFailure(e, in.ConnectionString, err, time.Since(started))
		}
		e.info.Store(info)
		res.Version, res.ClusterName = info.version, info.clusterName
	}
	res.Databases = l.names
	if l.err != nil {
		// Credentials limited to one database may not list the others: the test still succeeded.
		s.log.Debug("listDatabases failed", "uri", redact.URI(in.ConnectionString), "err", redact.Text(l.err.Error(), in.ConnectionString))
		res.Databases = []string{}
	}
	return res, nil
}

// serverInfo asks the server for its version (buildInfo) and replica set name (hello). Both
// are kept with the cached client: they change only when the server restarts.
func (s *Service) serverInfo(ctx context.Context, e *entry) (*serverInfo, error) {
	rp := options.RunCmd().SetReadPreference(readpref.PrimaryPreferred())
	admin := e.client.Database("admin")
	var build struct {
		Version string `bson:"version"`
	}
	if err := admin.RunCommand(ctx, bson.D{{Key: "buildInfo", Value: 1}}, rp).Decode(&build); err != nil {
		return nil, err
	}
	info := &serverInfo{version: build.Version, clusterName: e.firstHost}
	var hello struct {
		SetName string `bson:"setName"`
	}
	if err := admin.RunCommand(ctx, bson.D{{Key: "hello", Value: 1}}, rp).Decode(&hello); err == nil && hello.SetName != "" {
		info.clusterName = hello.SetName
	}
	return info, nil
}

func (s *Service) testFailure(e *entry, uri string, err error, elapsed time.Duration) (*TestResult, error) {
	s.cache.remove(e)
	if refusal := e.dialer.refusal(); refusal != nil {
		return nil, refusal
	}
	reason := s.describe(err, uri, e.selection)
	s.log.Info("mongodb test failed", "uri", redact.URI(uri), "reason", reason)
	return &TestResult{Success: false, Error: reason, Latency: ms(elapsed)}, nil
}

// Query runs a read-only find on in.Database.in.Collection with in.Filter (Extended JSON), at
// most in.Limit documents (DefaultLimit when nil), with maxTimeMS dbcheck.max_time. An
// unknown database or collection gives an empty result. The fields of Options.Secret are left
// out of the documents.
//
// Returns Invalid for a body that fails validation (a refused operator included), a connection
// string that does not parse or asks for a refused option, or a query the server rejects;
// Forbidden when reach control refuses the target or the filter names a secret field;
// Upstream when the server cannot be reached or refuses the credentials; UpstreamTimeout when
// the query runs past dbcheck.max_time; Unavailable (code Overloaded, Retry-After 1) when
// MaxConcurrent tests and queries are running.
func (s *Service) Query(ctx context.Context, in QueryInput) (*QueryResult, error) {
	if msgs := in.validate(s.opts.MaxLimit); len(msgs) > 0 {
		return nil, apperr.Validation(msgs...)
	}
	secrets := s.secretsOf(in.Database, in.Collection)
	if err := checkSecretFilter(in.filter, in.Collection, secrets); err != nil {
		return nil, err
	}
	limit := DefaultLimit
	if in.Limit != nil {
		limit = *in.Limit
	}
	leave, err := s.enter()
	if err != nil {
		return nil, err
	}
	defer leave()
	ctx, cancel := context.WithTimeout(ctx, s.opts.Timeout+s.opts.MaxTime+time.Second)
	defer cancel()
	e, _, err := s.cache.acquire(in.ConnectionString, func() (*entry, error) { return s.connect(ctx, in.ConnectionString) })
	var u *unreachable
	if errors.As(err, &u) {
		return nil, apperr.Wrap(apperr.Upstream, u, "cannot query the MongoDB server: "+u.reason)
	}
	if err != nil {
		return nil, err
	}
	defer s.cache.release(e)

	coll := e.client.Database(in.Database).Collection(in.Collection)
	fo := options.Find().SetLimit(int64(limit)).SetMaxTime(s.opts.MaxTime).SetBatchSize(int32(min(limit, 1000)))
	cur, err := coll.Find(ctx, in.filter, fo)
	if err != nil {
		return nil, s.queryError(e, in.ConnectionString, err)
	}
	defer func() {
		// A client that went away still ends the cursor on the server, but a server that
		// never answers the killCursors cannot hold the call.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), closeTimeout)
		defer cancel()
		_ = cur.Close(cctx)
	}()

	res := &QueryResult{Success: true, Documents: make([]json.RawMessage, 0, min(limit, 128)), mem: s.opts.Memory}
	done := false
	defer func() {
		if !done { // failed: the answer is dropped
			res.Release()
		}
	}()
	total := 0
	for len(res.Documents) < limit && cur.Next(ctx) { // a server may send more than it was asked
		doc, err := documentJSON(cur.Current, secrets)
		if err != nil {
			return nil, apperr.Wrap(apperr.Upstream, err, "the server sent a document that cannot be converted to JSON")
		}
		total += len(doc) + 1
		if total > s.opts.MaxBytes {
			res.Truncated = true
			break
		}
		// The document is held twice until the answer is written: here, and in the answer
		// encoded from it. What does not fit beside the other answers and bodies fails the
		// query at once, as a body that does not fit does.
		n := 2 * int64(len(doc)+1)
		if !s.opts.Memory.Take(n) {
			return nil, memlimit.Refusal(memlimit.ErrFull)
		}
		res.held += n
		res.Documents = append(res.Documents, doc)
	}
	if err := cur.Err(); err != nil {
		return nil, s.queryError(e, in.ConnectionString, err)
	}
	res.Count = len(res.Documents)
	done = true
	return res, nil
}

// closeTimeout bounds closing a cursor the answer did not read to its end.
const closeTimeout = time.Second

func (s *Service) queryError(e *entry, uri string, err error) error {
	if refusal := e.dialer.refusal(); refusal != nil {
		s.cache.remove(e)
		return refusal
	}
	var ce mongo.CommandError
	switch {
	case errors.As(err, &ce) && ce.Code == 50, // MaxTimeMSExpired
		errors.Is(err, context.DeadlineExceeded) && !isSelection(err):
		return apperr.Wrap(apperr.UpstreamTimeout, err, fmt.Sprintf("the query did not finish within dbcheck.max_time (%s)", s.opts.MaxTime))
	case errors.As(err, &ce) && !isAuth(err) && !mongo.IsNetworkError(err): // the driver wraps a lost connection as a command error
		return apperr.Wrap(apperr.Invalid, errors.New(redact.Text(err.Error(), uri)), "the server refused the query: "+redact.Text(commandText(ce), uri))
	}
	s.cache.remove(e)
	reason := s.describe(err, uri, e.selection)
	s.log.Info("mongodb query failed", "uri", redact.URI(uri), "reason", reason)
	return apperr.Wrap(apperr.Upstream, errors.New(reason), "cannot query the MongoDB server: "+reason)
}

func commandText(ce mongo.CommandError) string {
	msg := goFrames.ReplaceAllString(ce.Message, "")
	if ce.Name != "" {
		return fmt.Sprintf("(%s) %s", ce.Name, msg)
	}
	return msg
}

// goFrames matches the Go source frames some servers (FerretDB, the embedded store) put in an
// internal error's message: "[msg_find.go:344 handler.handleMaxTimeMSError] ". They say
// nothing to the caller and describe the server's code.
var goFrames = regexp.MustCompile(`\[[\w./-]+\.go:\d+ (?:[^\[\]]|\[[^\]]*\])*\]\s*`)

// selectionError returns the server selection failure in err's chain, if there is one. The
// driver returns it as a value, never as a pointer.
func selectionError(err error) (topology.ServerSelectionError, bool) {
	var sse topology.ServerSelectionError
	ok := errors.As(err, &sse)
	return sse, ok
}

func isSelection(err error) bool {
	_, ok := selectionError(err)
	return ok || errors.Is(err, topology.ErrServerSelectionTimeout)
}

func isAuth(err error) bool {
	t := err.Error()
	return strings.Contains(t, "auth error") || strings.Contains(t, "AuthenticationFailed") || strings.Contains(t, "Authentication failed")
}

// describe turns a driver error into one clear, redacted line.
func (s *Service) describe(err error, uri string, selection time.Duration) string {
	var reason string
	sse, selectionFailed := selectionError(err)
	switch {
	case selectionFailed:
		// Every server tried is named, also one whose first attempt had not ended when the
		// time ran out (a loaded machine, a short serverSelectionTimeoutMS).
		var parts []string
		for _, srv := range sse.Desc.Servers {
			if srv.LastError != nil {
				parts = append(parts, fmt.Sprintf("%s: %v", srv.Addr, srv.LastError))
			} else {
				parts = append(parts, fmt.Sprintf("%s: no answer", srv.Addr))
			}
		}
		reason = fmt.Sprintf("no server could be reached within %s", selection)
		if len(parts) > 0 {
			reason += " (" + strings.Join(parts, "; ") + ")"
		}
	case isAuth(err):
		reason = "authentication failed: the server refused the credentials"
		var ce mongo.CommandError
		if errors.As(err, &ce) && ce.Message != "" {
			reason += " (" + ce.Message + ")"
		}
	case errors.Is(err, context.DeadlineExceeded):
		reason = "the server did not answer in time"
	default:
		reason = err.Error()
	}
	return redact.Text(reason, uri)
}

// connect parses and checks uri and creates its driver client (which connects lazily).
func (s *Service) connect(ctx context.Context, uri string) (*entry, error) {
	p, err := parseConnString(uri, !s.opts.Unrestricted)
	if err != nil {
		return nil, err
	}
	if err := s.policy.precheck(ctx, p.cs.Hosts); err != nil {
		return nil, err
	}
	selection := s.opts.Timeout
	if p.cs.ServerSelectionTimeoutSet && p.cs.ServerSelectionTimeout > 0 {
		selection = min(selection, p.cs.ServerSelectionTimeout)
	}
	connectTimeout := s.opts.Timeout
	if p.cs.ConnectTimeoutSet && p.cs.ConnectTimeout > 0 {
		connectTimeout = min(connectTimeout, p.cs.ConnectTimeout)
	}
	if !s.opts.Unrestricted && len(p.cs.Hosts) > maxHosts {
		return nil, apperr.Validation(fmt.Sprintf("connectionString names %d hosts; at most %d", len(p.cs.Hosts), maxHosts))
	}
	d := &dialer{policy: s.policy, timeout: connectTimeout, maxHosts: maxHosts}
	if s.opts.Unrestricted {
		d.maxHosts = 0
	}
	o := options.Client().ApplyURI(uri).
		SetDialer(d).
		SetServerSelectionTimeout(selection).
		SetConnectTimeout(connectTimeout).
		// Every read waits at most this long, whatever the operation's context says, and a
		// server speaks only when asked (no streamed heartbeats): what the dialer's
		// connections read after each write is bounded (maxReply).
		SetSocketTimeout(s.opts.Timeout + s.opts.MaxTime + time.Second).
		SetServerMonitoringMode(options.ServerMonitoringModePoll).
		SetMaxPoolSize(s.opts.MaxPoolSize).
		SetMinPoolSize(0).
		SetMaxConnIdleTime(s.opts.IdleTimeout)
	if p.cs.AppName == "" {
		o.SetAppName("app-dbcheck")
	}
	if s.opts.PoolMonitor != nil {
		o.SetPoolMonitor(s.opts.PoolMonitor)
	}
	client, err := mongo.Connect(ctx, o)
	if err != nil {
		return nil, apperr.Validation("connectionString is not a valid MongoDB connection string: " + redact.Text(err.Error(), uri))
	}
	return &entry{client: client, dialer: d, firstHost: p.firstHost, selection: selection}, nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// documentJSON converts a document to relaxed Extended JSON with _id as a string (hex for an
// ObjectId), keeping the field order and leaving out the top-level fields named in secrets.
func documentJSON(raw bson.Raw, secrets []string) (json.RawMessage, error) {
	elems, err := raw.Elements()
	if err != nil {
		return nil, err
	}
	d := make(bson.D, 0, len(elems))
	for _, el := range elems {
		k, v := el.Key(), el.Value()
		if slices.Contains(secrets, k) {
			continue
		}
		if k == "_id" {
			d = append(d, bson.E{Key: k, Value: idString(v)})
			continue
		}
		d = append(d, bson.E{Key: k, Value: v})
	}
	return bson.MarshalExtJSON(d, false, false)
}

// idString renders an _id as a string, as the NestJS service this one replaces does (ObjectId →
// 24 hex digits).
func idString(v bson.RawValue) string {
	switch v.Type {
	case bson.TypeObjectID:
		return v.ObjectID().Hex()
	case bson.TypeString:
		return v.StringValue()
	case bson.TypeInt32:
		return strconv.FormatInt(int64(v.Int32()), 10)
	case bson.TypeInt64:
		return strconv.FormatInt(v.Int64(), 10)
	case bson.TypeDouble:
		return strconv.FormatFloat(v.Double(), 'g', -1, 64)
	}
	out, err := bson.MarshalExtJSON(bson.D{{Key: "v", Value: v}}, false, false)
	if err != nil || len(out) < 6 {
		return v.String()
	}
	return string(out[5 : len(out)-1]) // strip {"v": and }
}
