package mock

import (
	"container/list"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
)

// cachedEntry is one stored response.
type cachedEntry struct {
	Key        string            `json:"key"`
	Status     int               `json:"status"`
	StatusText string            `json:"statusText,omitempty"`
	Headers    map[string]string `json:"headers,omitempty"`
	Body       []byte            `json:"body"`
	Delay      time.Duration     `json:"delay,omitempty"`
	StoredAt   time.Time         `json:"storedAt"`
	ExpiresAt  time.Time         `json:"expiresAt"`
}

func (e *cachedEntry) response() *Response {
	return &Response{Status: e.Status, StatusText: e.StatusText, Headers: cloneHeaders(e.Headers), Body: e.Body, Delay: e.Delay}
}

// backend is a persistent tier of the cache.
type backend interface {
	load() ([]*cachedEntry, error)
	get(key string) (*cachedEntry, error)
	put(e *cachedEntry) error
	remove(keys ...string) error
	close() error
}

type lruItem struct {
	key     string
	expires time.Time
	e       *cachedEntry // nil when the value lives in the backend only
}

// cache is the response cache: an LRU index in memory, bounded by
// MaxCacheSize, in front of an optional persistent backend.
type cache struct {
	mu         sync.Mutex
	cfg        PersistenceConfig
	ll         *list.List // front is most recently used
	items      map[string]*list.Element
	be         backend
	keepValues bool
	lastSweep  time.Time
	event      func(op, key string, err error)
}

// defaultCacheDir is where files go when PersistenceConfig.Dir is empty.
func defaultCacheDir() string {
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "acme-mock")
	}
	return filepath.Join(os.TempDir(), "acme-mock")
}

// openCache opens the configured storage. When the persistent tier cannot
// be opened it returns a memory cache and a [CodePersistence] error.
func openCache(cfg PersistenceConfig, event func(op, key string, err error)) (*cache, error) {
	if event == nil {
		event = func(string, string, error) {}
	}
	c := &cache{cfg: cfg, ll: list.New(), items: make(map[string]*list.Element), keepValues: true, event: event}
	dir := cfg.Dir
	if dir == "" {
		dir = defaultCacheDir()
	}
	var err error
	switch cfg.Storage {
	case StorageMemory, "":
		return c, nil
	case StorageIndexedDB:
		c.be, err = openBolt(dir, cfg)
		c.keepValues = false
	case StorageIntelligent:
		c.be, err = openBolt(dir, cfg)
	case StorageLocalStorage:
		c.be, err = openJSONFile(dir, cfg.Namespace)
	default:
		err = fmt.Errorf("unknown storage %q", cfg.Storage)
	}
	if err != nil {
		c.be, c.keepValues = nil, true
		return c, &Error{Code: CodePersistence, Message: fmt.Sprintf("open %s storage", cfg.Storage), Err: err}
	}
	entries, err := c.be.load()
	if err != nil {
		event("load", "", err)
	}
	// Oldest first, so the newest end up at the front of the LRU list.
	sortEntries(entries)
	for _, e := range entries {
		it := &lruItem{key: e.Key, expires: e.ExpiresAt}
		if c.keepValues {
			it.e = e
		}
		c.items[e.Key] = c.ll.PushFront(it)
	}
	c.evictLocked()
	return c, nil
}

// sortEntries orders entries oldest first, keeping the order of entries
// stored at the same time.
func sortEntries(es []*cachedEntry) {
	slices.SortStableFunc(es, func(a, b *cachedEntry) int { return a.StoredAt.Compare(b.StoredAt) })
}

// get returns the unexpired response stored under key.
func (c *cache) get(key string, now time.Time) (*Response, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sweepLocked(now)
	el, ok := c.items[key]
	if !ok {
		return nil, false
	}
	it := el.Value.(*lruItem)
	if !now.Before(it.expires) {
		c.removeLocked(el)
		c.event("expire", key, nil)
		return nil, false
	}
	c.ll.MoveToFront(el)
	e := it.e
	if e == nil {
		var err error
		e, err = c.be.get(key)
		if err != nil || e == nil {
			if err != nil {
				c.event("read", key, err)
			}
			c.removeLocked(el)
			return nil, false
		}
	}
	c.event("hit", key, nil)
	return e.response(), true
}

// put stores resp under key. resp.Body holds the encoded body: put does
// not encode Data, the caller did it with the Content-Type the response is
// answered with. The memory tier is updated even when the persistent tier
// fails; the failure is returned.
func (c *cache) put(key string, resp *Response, now time.Time) error {
	e := &cachedEntry{Key: key, Status: statusOf(resp), StatusText: resp.StatusText, Headers: cloneHeaders(resp.Headers), Body: resp.Body,
		Delay: resp.Delay, StoredAt: now, ExpiresAt: now.Add(c.cfg.TTL)}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sweepLocked(now)
	it := &lruItem{key: key, expires: e.ExpiresAt}
	if c.keepValues {
		it.e = e
	}
	if el, ok := c.items[key]; ok {
		el.Value = it
		c.ll.MoveToFront(el)
	} else {
		c.items[key] = c.ll.PushFront(it)
	}
	c.event("store", key, nil)
	var perr error
	if c.be != nil {
		if perr = c.be.put(e); perr != nil {
			c.event("store", key, perr)
		}
	}
	c.evictLocked()
	return perr
}

// evictLocked drops least recently used entries beyond MaxCacheSize.
func (c *cache) evictLocked() {
	for c.ll.Len() > max(c.cfg.MaxCacheSize, 1) {
		el := c.ll.Back()
		c.event("evict", el.Value.(*lruItem).key, nil)
		c.removeLocked(el)
	}
}

func (c *cache) removeLocked(el *list.Element) {
	it := el.Value.(*lruItem)
	c.ll.Remove(el)
	delete(c.items, it.key)
	if c.be != nil {
		if err := c.be.remove(it.key); err != nil {
			c.event("delete", it.key, err)
		}
	}
}

// sweepLocked removes expired entries when AutoCleanup is on, at most
// once per interval (a tenth of the TTL, between 1s and 1m).
func (c *cache) sweepLocked(now time.Time) {
	if !c.cfg.AutoCleanup {
		return
	}
	every := min(max(c.cfg.TTL/10, time.Second), time.Minute)
	if now.Sub(c.lastSweep) < every {
		return
	}
	c.lastSweep = now
	var expired []string
	for el := c.ll.Back(); el != nil; {
		prev := el.Prev()
		it := el.Value.(*lruItem)
		if !now.Before(it.expires) {
			c.ll.Remove(el)
			delete(c.items, it.key)
			expired = append(expired, it.key)
			c.event("expire", it.key, nil)
		}
		el = prev
	}
	if c.be != nil && len(expired) > 0 {
		if err := c.be.remove(expired...); err != nil {
			c.event("delete", "", err)
		}
	}
}

// len returns the number of entries.
func (c *cache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ll.Len()
}

func (c *cache) close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.be == nil {
		return nil
	}
	err := c.be.close()
	c.be = nil
	return err
}

// boltBackend stores entries in a bbolt file (the "indexeddb" storage).
type boltBackend struct {
	db     *bolt.DB
	bucket []byte
}

var metaBucket = []byte("__mock_meta")

func openBolt(dir string, cfg PersistenceConfig) (*boltBackend, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	name := cfg.DBName
	if filepath.Ext(name) == "" {
		name += ".db"
	}
	db, err := bolt.Open(filepath.Join(dir, filepath.Base(name)), 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		return nil, err
	}
	b := &boltBackend{db: db, bucket: []byte(cfg.StoreName)}
	err = db.Update(func(tx *bolt.Tx) error {
		meta, err := tx.CreateBucketIfNotExists(metaBucket)
		if err != nil {
			return err
		}
		vkey := []byte("version:" + cfg.StoreName)
		want := strconv.Itoa(cfg.DBVersion)
		if got := meta.Get(vkey); got != nil && string(got) != want {
			if err := tx.DeleteBucket(b.bucket); err != nil && !errors.Is(err, bolt.ErrBucketNotFound) {
				return err
			}
		}
		if err := meta.Put(vkey, []byte(want)); err != nil {
			return err
		}
		_, err = tx.CreateBucketIfNotExists(b.bucket)
		return err
	})
	if err != nil {
		db.Close()
		return nil, err
	}
	return b, nil
}

func (b *boltBackend) load() ([]*cachedEntry, error) {
	var out []*cachedEntry
	err := b.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(b.bucket).ForEach(func(k, v []byte) error {
			var e cachedEntry
			if json.Unmarshal(v, &e) == nil {
				out = append(out, &e)
			}
			return nil
		})
	})
	return out, err
}

func (b *boltBackend) get(key string) (*cachedEntry, error) {
	var e *cachedEntry
	err := b.db.View(func(tx *bolt.Tx) error {
		v := tx.Bucket(b.bucket).Get([]byte(key))
		if v == nil {
			return nil
		}
		e = new(cachedEntry)
		return json.Unmarshal(v, e)
	})
	return e, err
}

func (b *boltBackend) put(e *cachedEntry) error {
	v, err := json.Marshal(e)
	if err != nil {
		return err
	}
	return b.db.Update(func(tx *bolt.Tx) error { return tx.Bucket(b.bucket).Put([]byte(e.Key), v) })
}

func (b *boltBackend) remove(keys ...string) error {
	return b.db.Update(func(tx *bolt.Tx) error {
		bk := tx.Bucket(b.bucket)
		for _, k := range keys {
			if err := bk.Delete([]byte(k)); err != nil {
				return err
			}
		}
		return nil
	})
}

func (b *boltBackend) close() error { return b.db.Close() }

// jsonFile stores entries in one JSON file per namespace (the
// "localstorage" storage). Every change rewrites the file atomically.
type jsonFile struct {
	path    string
	entries map[string]*cachedEntry
}

type jsonFileDoc struct {
	Version int            `json:"version"`
	Entries []*cachedEntry `json:"entries"`
}

func openJSONFile(dir, namespace string) (*jsonFile, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	safe := strings.Map(func(r rune) rune {
		if r == '/' || r == '\\' || r == ':' || r == 0 {
			return '_'
		}
		return r
	}, namespace)
	if safe == "" || safe == "." || safe == ".." {
		safe = "default"
	}
	f := &jsonFile{path: filepath.Join(dir, safe+".json"), entries: map[string]*cachedEntry{}}
	b, err := os.ReadFile(f.path)
	if errors.Is(err, os.ErrNotExist) {
		return f, nil
	}
	if err != nil {
		return nil, err
	}
	var doc jsonFileDoc
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", f.path, err)
	}
	for _, e := range doc.Entries {
		if e != nil {
			f.entries[e.Key] = e
		}
	}
	return f, nil
}

func (f *jsonFile) load() ([]*cachedEntry, error) {
	out := make([]*cachedEntry, 0, len(f.entries))
	for _, e := range f.entries {
		out = append(out, e)
	}
	return out, nil
}

func (f *jsonFile) get(key string) (*cachedEntry, error) { return f.entries[key], nil }

func (f *jsonFile) put(e *cachedEntry) error {
	f.entries[e.Key] = e
	return f.flush()
}

func (f *jsonFile) remove(keys ...string) error {
	for _, k := range keys {
		delete(f.entries, k)
	}
	return f.flush()
}

func (f *jsonFile) flush() error {
	doc := jsonFileDoc{Version: 1, Entries: make([]*cachedEntry, 0, len(f.entries))}
	for _, e := range f.entries {
		doc.Entries = append(doc.Entries, e)
	}
	sortEntries(doc.Entries)
	b, err := json.Marshal(doc)
	if err != nil {
		return err
	}
	tmp := f.path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, f.path)
}

func (f *jsonFile) close() error { return nil }
