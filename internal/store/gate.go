package store

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"sync"

	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/bson/bsontype"
	"go.mongodb.org/mongo-driver/x/bsonx/bsoncore"
)

// The embedded store (FerretDB v1 on SQLite) applies an update as a read followed by a write,
// with no isolation between connections: two concurrent $inc of one document can both read the
// old value, and one increment is lost. The gate makes every write atomic for every client of
// the store, wherever it runs: it is the store's only listener, forwards each client
// connection to FerretDB (on a listener only the gate knows) message by message, and runs the
// write commands of all connections one at a time. Reads pass concurrently. SQLite admits one
// writer at a time anyway, so serializing writes costs no throughput.
//
// The gate reads the wire protocol's framing: the 16-byte header and, for OP_MSG, the name of
// the command (the first key of the body). It never rewrites a message. It also looks for a
// NaN in a command's documents, on which the embedded store closes the connection, and
// answers such a command with an error itself (see hasNaN).

// Wire protocol constants (MongoDB's OP_MSG specification).
const (
	opMsg          = 2013
	headerLen      = 16
	flagChecksum   = 1 << 0
	flagMoreToCome = 1 << 1
	// maxMessageLen is MongoDB's maxMessageSizeBytes, which the store advertises.
	maxMessageLen = 48_000_000
	// keepBuffer is the largest message buffer a connection keeps between messages.
	keepBuffer = 1 << 20
)

// writeCommands are the commands that change data or metadata, by the name the body's first
// key carries. Each runs alone.
var writeCommands = map[string]bool{
	"insert": true, "update": true, "delete": true, "findAndModify": true, "findandmodify": true,
	"bulkWrite": true, "create": true, "drop": true, "dropDatabase": true, "createIndexes": true,
	"dropIndexes": true, "renameCollection": true, "collMod": true,
}

// gate accepts the store's client connections and forwards them to the backend.
type gate struct {
	ln      net.Listener
	backend func() (net.Conn, error)
	log     *slog.Logger
	writes  sync.Mutex // held while one write command runs
	hooksMu sync.RWMutex
	hooks   []writeHook

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup
}

// writeHook is a function called after each write command on one collection.
type writeHook struct {
	db, coll string
	fn       func()
}

// onWrite adds a hook.
func (g *gate) onWrite(h writeHook) {
	g.hooksMu.Lock()
	g.hooks = append(g.hooks, h)
	g.hooksMu.Unlock()
}

// runHooks calls the hooks of the collection that the write command req names.
func (g *gate) runHooks(req []byte) {
	g.hooksMu.RLock()
	hooks := g.hooks
	g.hooksMu.RUnlock()
	if len(hooks) == 0 {
		return
	}
	body := bson.Raw(commandBody(req))
	elem, err := body.IndexErr(0)
	if err != nil {
		return
	}
	coll, _ := elem.Value().StringValueOK()
	db, _ := body.Lookup("$db").StringValueOK()
	for _, h := range hooks {
		if h.db == db && h.coll == coll {
			h.fn()
		}
	}
}

// startGate listens on addr (empty: a random loopback port) and serves until close.
func startGate(addr string, backend func() (net.Conn, error), log *slog.Logger) (*gate, error) {
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("store: listen: %w", err)
	}
	g := &gate{ln: ln, backend: backend, log: log, conns: map[net.Conn]struct{}{}}
	g.wg.Add(1)
	go g.accept()
	return g, nil
}

// addr returns the address clients connect to.
func (g *gate) addr() string { return g.ln.Addr().String() }

func (g *gate) accept() {
	defer g.wg.Done()
	for {
		c, err := g.ln.Accept()
		if err != nil {
			return // closed
		}
		if !g.track(c) {
			_ = c.Close()
			return
		}
		g.wg.Add(1)
		go func() {
			defer g.wg.Done()
			defer g.untrack(c)
			if err := g.serve(c); err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				g.log.Debug("store connection ended", "err", err)
			}
		}()
	}
}

func (g *gate) track(c net.Conn) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return false
	}
	g.conns[c] = struct{}{}
	return true
}

func (g *gate) untrack(c net.Conn) {
	g.mu.Lock()
	delete(g.conns, c)
	g.mu.Unlock()
	_ = c.Close()
}

// close stops accepting, closes every open connection and waits for their goroutines.
func (g *gate) close() {
	g.mu.Lock()
	g.closed = true
	for c := range g.conns {
		_ = c.Close()
	}
	g.mu.Unlock()
	_ = g.ln.Close()
	g.wg.Wait()
}

// serve forwards one client connection: each request to the backend, then its reply back, a
// write command under the gate's write lock from the moment it is sent until its reply has
// been read. Buffers grown past keepBuffer for a large message are let go after it.
func (g *gate) serve(client net.Conn) error {
	server, err := g.backend()
	if err != nil {
		return fmt.Errorf("connect to the store: %w", err)
	}
	defer server.Close()

	cr, sr := bufio.NewReader(client), bufio.NewReader(server)
	var req, res []byte
	for {
		if req, err = readMessage(cr, req); err != nil {
			return err
		}
		if hasNaN(req) {
			// The embedded store closes the connection on a NaN (it can neither store nor
			// match one): the client gets an error instead, and keeps its connection.
			res = nanRefusal(req, res)
			if flags(req)&flagMoreToCome == 0 {
				if _, err := client.Write(res); err != nil {
					return err
				}
			}
			continue
		}
		write := isWrite(req)
		if write {
			g.writes.Lock()
		}
		res, err = g.exchange(server, sr, req, res)
		if write {
			g.writes.Unlock()
		}
		if err != nil {
			return err
		}
		if write {
			g.runHooks(req) // before the client learns the write is done
		}
		if flags(req)&flagMoreToCome == 0 { // else the client expects no answer
			if _, err := client.Write(res); err != nil {
				return err
			}
		}
		if cap(req) > keepBuffer {
			req = nil
		}
		if cap(res) > keepBuffer {
			res = nil
		}
	}
}

// exchange sends req and returns the store's reply. The store answers every request, also
// one flagged moreToCome (whose client expects no answer: serve drops it), and never streams
// its replies (it does not offer exhaust cursors).
func (g *gate) exchange(server net.Conn, sr *bufio.Reader, req, res []byte) ([]byte, error) {
	if _, err := server.Write(req); err != nil {
		return res, fmt.Errorf("send to the store: %w", err)
	}
	res, err := readMessage(sr, res)
	if err != nil {
		return res, fmt.Errorf("read the store's reply: %w", err)
	}
	return res, nil
}

// readMessage reads one wire message into buf (grown as needed) and returns it.
func readMessage(r *bufio.Reader, buf []byte) ([]byte, error) {
	var size [4]byte
	if _, err := io.ReadFull(r, size[:]); err != nil {
		return buf, err
	}
	n := int(int32(binary.LittleEndian.Uint32(size[:])))
	if n < headerLen || n > maxMessageLen {
		return buf, fmt.Errorf("store: a wire message of %d bytes", n)
	}
	if cap(buf) < n {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	copy(buf, size[:])
	if _, err := io.ReadFull(r, buf[4:]); err != nil {
		return buf, fmt.Errorf("store: short wire message: %w", err)
	}
	return buf, nil
}

// flags returns an OP_MSG's flag bits, 0 for any other message.
func flags(msg []byte) uint32 {
	if len(msg) < headerLen+4 || binary.LittleEndian.Uint32(msg[12:16]) != opMsg {
		return 0
	}
	return binary.LittleEndian.Uint32(msg[16:20])
}

// isWrite reports whether msg is an OP_MSG whose command is one of writeCommands.
func isWrite(msg []byte) bool {
	return writeCommands[string(commandName(msg))]
}

// commandName returns the name of an OP_MSG's command, the first key of its body, or nil when
// msg is not a well-formed OP_MSG.
func commandName(msg []byte) []byte {
	doc := commandBody(msg)
	if len(doc) < 7 || doc[4] == 0 {
		return nil
	}
	for i := 5; i < len(doc); i++ {
		if doc[i] == 0 {
			return doc[5:i]
		}
	}
	return nil
}

// commandBody returns an OP_MSG's body (the section of kind 0), a BSON document whose length
// prefix fits msg, or nil when msg is not a well-formed OP_MSG.
func commandBody(msg []byte) []byte {
	var body []byte
	sections(msg, func(kind byte, sec []byte) bool {
		if kind == 0 {
			body = sec
		}
		return kind != 0
	})
	return body
}

// sections calls fn with the kind and the bytes (size prefix included) of each section of an
// OP_MSG, in order, until fn returns false. It stops at the first malformed section and calls
// fn for nothing when msg is not an OP_MSG; it reports whether every section was read.
func sections(msg []byte, fn func(kind byte, sec []byte) bool) bool {
	if len(msg) < headerLen+4 || binary.LittleEndian.Uint32(msg[12:16]) != opMsg {
		return false
	}
	end := len(msg)
	if flags(msg)&flagChecksum != 0 {
		end -= 4
	}
	for pos := headerLen + 4; pos < end; {
		kind := msg[pos]
		pos++
		if pos+4 > end {
			return false
		}
		size := int(int32(binary.LittleEndian.Uint32(msg[pos : pos+4])))
		if size < 5 || pos+size > end || kind > 1 {
			return false
		}
		if !fn(kind, msg[pos:pos+size]) {
			return true
		}
		pos += size
	}
	return true
}

// hasNaN reports whether an OP_MSG's body or document sequences hold a NaN double at any
// depth. FerretDB v1 can neither store nor match a NaN and closes the connection on one (the
// driver then reports "socket was unexpectedly closed" and clears its pool); MongoDB itself
// takes them. A malformed message is left for the store to answer.
func hasNaN(msg []byte) bool {
	found := false
	sections(msg, func(kind byte, sec []byte) bool {
		if kind == 0 {
			found = docHasNaN(sec)
			return !found
		}
		// A document sequence: int32 size, the identifier (a cstring), then documents.
		seq := sec[4:]
		i := 0
		for i < len(seq) && seq[i] != 0 {
			i++
		}
		for docs := seq[min(i+1, len(seq)):]; len(docs) > 0; {
			doc, rest, ok := bsoncore.ReadDocument(docs)
			if !ok {
				return false
			}
			if docHasNaN(doc) {
				found = true
				return false
			}
			docs = rest
		}
		return true
	})
	return found
}

// docHasNaN reports whether a BSON document (or array) holds a NaN double at any depth.
func docHasNaN(doc []byte) bool {
	if len(doc) < 5 {
		return false
	}
	for rem := doc[4 : len(doc)-1]; len(rem) > 0; {
		elem, rest, ok := bsoncore.ReadElement(rem)
		if !ok {
			return false
		}
		switch v := elem.Value(); v.Type {
		case bsontype.Double:
			if f, ok := v.DoubleOK(); ok && math.IsNaN(f) {
				return true
			}
		case bsontype.EmbeddedDocument, bsontype.Array:
			if docHasNaN(v.Data) {
				return true
			}
		}
		rem = rest
	}
	return false
}

// nanRefusal is the store's error reply to req, a command holding a NaN, written into buf:
// BadValue (code 2), as MongoDB answers a value it cannot take.
func nanRefusal(req, buf []byte) []byte {
	body, _ := bson.Marshal(bson.D{
		{Key: "ok", Value: 0.0},
		{Key: "errmsg", Value: "NaN values cannot be stored or matched by the embedded store"},
		{Key: "code", Value: int32(2)},
		{Key: "codeName", Value: "BadValue"},
	})
	n := headerLen + 4 + 1 + len(body)
	buf = append(buf[:0], make([]byte, headerLen+5)...)
	binary.LittleEndian.PutUint32(buf[0:4], uint32(n))
	binary.LittleEndian.PutUint32(buf[4:8], 0)       // requestID
	copy(buf[8:12], req[4:8])                        // responseTo: the request's id
	binary.LittleEndian.PutUint32(buf[12:16], opMsg) // opCode
	binary.LittleEndian.PutUint32(buf[16:20], 0)     // flagBits
	buf[20] = 0                                      // section kind 0: the body
	return append(buf, body...)
}
