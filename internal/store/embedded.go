package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/FerretDB/FerretDB/ferretdb"
)

// ferretNewMu serializes ferretdb.New, which is not safe to call from two goroutines at once:
// tests and the built-in mock open several embedded stores in one process.
var ferretNewMu sync.Mutex

// File names inside the data directory.
const (
	lockName = "app.lock"
	uriFile  = "embedded-mongodb.uri"
	dbDir    = "db"
)

// URIFile returns the path of the file that holds a running embedded store's URI.
func URIFile(dataDir string) string { return filepath.Join(dataDir, uriFile) }

// ErrNotRunning is returned by RunningURI when no process serves the embedded store of a data
// directory.
var ErrNotRunning = errors.New("no running app process serves the embedded store of this data directory")

// RunningURI returns the URI of the embedded store that a running process (`app serve`, `app
// store serve`) serves from dataDir, read from its URI file, and opens, locks or creates
// nothing. It returns ErrNotRunning when the file is absent or still empty. A process killed
// without a clean stop leaves its file behind: the URI then names an address nothing answers on.
func RunningURI(dataDir string) (string, error) {
	b, err := os.ReadFile(URIFile(dataDir))
	if errors.Is(err, fs.ErrNotExist) || (err == nil && len(strings.TrimSpace(string(b))) == 0) {
		return "", fmt.Errorf("store: %s: %w", dataDir, ErrNotRunning)
	}
	if err != nil {
		return "", fmt.Errorf("store: read %s: %w", uriFile, err)
	}
	return strings.TrimSpace(string(b)), nil
}

// embedded is a FerretDB server running in this process, behind its gate.
type embedded struct {
	created bool // the data directory held no store: this one is new and empty
	lock    *os.File
	uriPath string
	gate    *gate
	cancel  context.CancelFunc
	done    chan struct{}
}

// openEmbedded locks dataDir and starts FerretDB on a listener only this process knows (a Unix
// socket in the data directory where the platform and the path allow, else a loopback port),
// with the gate in front of it on a random loopback port: the store's URI is the gate's. When
// dataDir is locked by another process and shared is set, it returns that process's URI
// instead.
func openEmbedded(ctx context.Context, opts Options, log *slog.Logger) (*embedded, string, error) {
	dataDir := opts.DataDir
	if dataDir == "" {
		return nil, "", errors.New("store: no mongodb.uri and no data_dir for the embedded store")
	}
	_, statErr := os.Stat(filepath.Join(dataDir, dbDir))
	created := errors.Is(statErr, fs.ErrNotExist)
	if err := os.MkdirAll(filepath.Join(dataDir, dbDir), 0o700); err != nil {
		return nil, "", fmt.Errorf("store: create data directory: %w", err)
	}
	lock, uri, err := acquire(ctx, dataDir, opts.LockWait, log)
	if errors.Is(err, ErrLocked) && uri != "" && opts.Shared {
		return nil, uri, nil // a running server's store
	}
	if err != nil {
		return nil, "", err
	}
	if opts.Shared {
		// An operator command's store serves only itself: it publishes no URI, and one left by
		// a server that was killed names an address nothing answers on.
		_ = os.Remove(URIFile(dataDir))
	}

	abs, err := filepath.Abs(filepath.Join(dataDir, dbDir))
	if err != nil {
		unlock(lock)
		return nil, "", fmt.Errorf("store: %w", err)
	}
	listener := backendListener(abs)
	// Read before FerretDB opens them: opening an emptied file writes SQLite's header to it.
	damaged := damagedFiles(abs)
	ferretNewMu.Lock() // ferretdb.New writes a package-level variable (the version's package name)
	f, err := ferretdb.New(&ferretdb.Config{
		Listener:  listener,
		Handler:   "sqlite",
		SQLiteURL: "file:" + abs + "/",
		Logger:    ferretLogger(log),
	})
	ferretNewMu.Unlock()
	if err != nil {
		unlock(lock)
		if len(damaged) > 0 {
			return nil, "", fmt.Errorf("store: start embedded store: %s: not an SQLite database (damaged, emptied or replaced): restore it from a backup, or move it out of %s to start without that database: %w",
				strings.Join(damaged, ", "), abs, err)
		}
		return nil, "", fmt.Errorf("store: start embedded store: %w", err)
	}
	runCtx, cancel := context.WithCancel(context.Background())
	e := &embedded{lock: lock, uriPath: URIFile(dataDir), cancel: cancel, done: make(chan struct{}), created: created}
	go func() {
		defer close(e.done)
		_ = f.Run(runCtx)
	}()
	backendURI, err := listenerURI(ctx, f, e.done)
	if err != nil {
		e.close()
		return nil, "", err
	}
	network, address := "unix", listener.Unix
	if address == "" {
		u, err := url.Parse(backendURI)
		if err != nil {
			e.close()
			return nil, "", fmt.Errorf("store: embedded store's address %q: %w", backendURI, err)
		}
		network, address = "tcp", u.Host
	}
	backend := func() (net.Conn, error) { return net.Dial(network, address) }
	if e.gate, err = startGate(opts.Listen, backend, log); err != nil {
		e.close()
		return nil, "", err
	}
	uri = "mongodb://" + e.gate.addr() + "/"
	if !opts.Shared {
		if err := os.WriteFile(e.uriPath, []byte(uri+"\n"), 0o600); err != nil {
			e.close()
			return nil, "", fmt.Errorf("store: write %s: %w", uriFile, err)
		}
	}
	log.Info("embedded MongoDB store started", "uri", uri, "dir", abs)
	return e, uri, nil
}

// DefaultLockWait is how long an opener waits for a data directory an operator command holds.
const DefaultLockWait = time.Minute

// acquire takes dataDir's lock. While a server (`serve`, `store serve`) holds it, it returns
// ErrLocked with the URI the server published. While a process that publishes none holds it
// (an operator command, which holds it for as long as it runs, or a server still starting),
// it waits for the lock or the URI, up to wait (DefaultLockWait when 0) or until ctx ends, so
// that commands run at the same moment (from cron, say) take their turns. A wait that ctx
// ends returns an error that wraps ctx's cause (context.Cause).
func acquire(ctx context.Context, dataDir string, wait time.Duration, log *slog.Logger) (*os.File, string, error) {
	if wait <= 0 {
		wait = DefaultLockWait
	}
	path := filepath.Join(dataDir, lockName)
	start := time.Now()
	told := false
	for {
		lock, err := tryLock(path)
		if !errors.Is(err, ErrLocked) {
			return lock, "", err
		}
		if uri, err := RunningURI(dataDir); err == nil {
			return nil, uri, fmt.Errorf("store: %s: %w (a running server)", dataDir, ErrLocked)
		}
		waited := time.Since(start)
		if waited >= wait {
			return nil, "", fmt.Errorf("store: %s: %w (%s) for more than %s", dataDir, ErrLocked, holder(path), wait)
		}
		if !told && waited >= time.Second {
			log.Info("waiting for the data directory", "dir", dataDir, "held_by", holder(path))
			told = true
		}
		t := time.NewTimer(50 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			// The cause, not ctx.Err(): the caller may say why it gave up (a signal).
			return nil, "", fmt.Errorf("store: stopped while waiting for the lock on %s, held by %s: %w", dataDir, holder(path), context.Cause(ctx))
		case <-t.C:
		}
	}
}

// holder names the process that holds the lock file at path, as far as it can be read.
func holder(path string) string {
	b, err := os.ReadFile(path)
	if pid := strings.TrimSpace(string(b)); err == nil && pid != "" {
		return "process " + pid
	}
	return "another process"
}

// listenerURI waits for the listener to be up and returns its URI.
func listenerURI(ctx context.Context, f *ferretdb.FerretDB, done <-chan struct{}) (string, error) {
	got := make(chan string, 1)
	go func() { got <- f.MongoDBURI() }()
	select {
	case uri := <-got:
		return uri, nil
	case <-done:
		return "", errors.New("store: embedded store stopped while starting")
	case <-ctx.Done():
		return "", fmt.Errorf("store: start embedded store: %w", ctx.Err())
	case <-time.After(30 * time.Second):
		return "", errors.New("store: embedded store did not start listening within 30s")
	}
}

func (e *embedded) close() {
	_ = os.Remove(e.uriPath)
	if e.gate != nil {
		e.gate.close()
	}
	e.cancel()
	select {
	case <-e.done:
	case <-time.After(10 * time.Second):
	}
	unlock(e.lock)
}

// maxUnixPath is the longest socket path every Unix platform takes (macOS: 104 bytes).
const maxUnixPath = 100

// backendListener returns FerretDB's listener: a Unix socket under dir, reachable only by
// this user, where the platform has them and the path fits; else a loopback port.
func backendListener(dir string) ferretdb.ListenerConfig {
	sock := filepath.Join(dir, "store.sock")
	if runtime.GOOS == "windows" || len(sock) > maxUnixPath {
		return ferretdb.ListenerConfig{TCP: "127.0.0.1:0"}
	}
	_ = os.Remove(sock) // left by a process that was killed; the data directory's lock is ours
	return ferretdb.ListenerConfig{Unix: sock}
}

// tryLock opens path and takes an exclusive, non-blocking lock on it (lockFile, per platform),
// then writes this process's id into it. Returns ErrLocked when another process holds it.
func tryLock(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("store: open lock: %w", err)
	}
	if err := lockFile(f); err != nil {
		_ = f.Close()
		if errors.Is(err, ErrLocked) {
			return nil, ErrLocked
		}
		return nil, fmt.Errorf("store: lock %s: %w", path, err)
	}
	_ = f.Truncate(0)
	_, _ = fmt.Fprintf(f, "%d\n", os.Getpid())
	return f, nil
}

func unlock(f *os.File) {
	_ = unlockFile(f)
	_ = f.Close()
}

// ferretLogger passes on FerretDB's errors only: its info and warning lines describe every
// connection and unsupported command (the driver's endSessions) and would drown the program's log.
func ferretLogger(log *slog.Logger) *slog.Logger {
	return slog.New(errorsOnly{h: log.Handler(), attrs: []slog.Attr{slog.String("component", "ferretdb")}})
}

// errorsOnly passes on records at slog.LevelError and above. FerretDB derives a logger with
// attributes for every connection and command; formatting those costs as much as a small
// query, so the attributes and groups are kept as given and applied only to the rare record
// that is passed on.
type errorsOnly struct {
	h     slog.Handler
	attrs []slog.Attr
	group []string // groups opened after attrs, innermost last
}

func (e errorsOnly) Enabled(ctx context.Context, lv slog.Level) bool {
	return lv >= slog.LevelError && e.h.Enabled(ctx, lv)
}

func (e errorsOnly) Handle(ctx context.Context, r slog.Record) error {
	return e.resolved().Handle(ctx, r)
}

func (e errorsOnly) WithAttrs(a []slog.Attr) slog.Handler {
	if len(e.group) > 0 { // attributes inside a group: apply what is pending now
		return errorsOnly{h: e.resolved().WithAttrs(a)}
	}
	return errorsOnly{h: e.h, attrs: append(e.attrs[:len(e.attrs):len(e.attrs)], a...)}
}

func (e errorsOnly) WithGroup(n string) slog.Handler {
	return errorsOnly{h: e.h, attrs: e.attrs, group: append(e.group[:len(e.group):len(e.group)], n)}
}

// resolved returns the wrapped handler with the pending attributes and groups applied.
func (e errorsOnly) resolved() slog.Handler {
	h := e.h
	if len(e.attrs) > 0 {
		h = h.WithAttrs(e.attrs)
	}
	for _, g := range e.group {
		h = h.WithGroup(g)
	}
	return h
}

// sqliteHeader begins every SQLite database file.
const sqliteHeader = "SQLite format 3\x00"

// damagedFiles lists the database files of dir (FerretDB's *.sqlite) that do not begin with
// SQLite's header, for the error of a store that cannot start: FerretDB's names none of its
// files ("file is not a database (26)", or a missing table of an emptied one).
func damagedFiles(dir string) []string {
	files, _ := filepath.Glob(filepath.Join(dir, "*.sqlite"))
	var bad []string
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			continue
		}
		head := make([]byte, len(sqliteHeader))
		n, _ := io.ReadFull(f, head)
		_ = f.Close()
		if string(head[:n]) != sqliteHeader {
			bad = append(bad, name)
		}
	}
	return bad
}
