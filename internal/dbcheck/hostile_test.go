package dbcheck_test

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/bson"

	"github.com/acme/app/internal/apperr"
	"github.com/acme/app/internal/dbcheck"
)

// A reply of fakeMongo's handler: the document to answer, or stall (never answer), or hangUp
// (close the connection).
type fakeReply struct {
	doc    any
	stall  bool
	hangUp bool
}

// fakeMongo serves the MongoDB wire protocol on a loopback port as a hostile server may:
// handshakes are answered with hello (plus extra fields), and every other command by handle,
// named in lower case. It returns the server's host:port.
func fakeMongo(t *testing.T, extraHello bson.D, handle func(name string, cmd bson.Raw) fakeReply) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	done := make(chan struct{})
	t.Cleanup(func() { close(done); ln.Close(); wg.Wait() })
	serve := func(c net.Conn) {
		defer c.Close()
		for {
			var hdr [16]byte
			if _, err := io.ReadFull(c, hdr[:]); err != nil {
				return
			}
			size := int(binary.LittleEndian.Uint32(hdr[0:]))
			reqID, op := binary.LittleEndian.Uint32(hdr[4:]), binary.LittleEndian.Uint32(hdr[12:])
			if size < 16 || size > 48<<20 {
				return
			}
			body := make([]byte, size-16)
			if _, err := io.ReadFull(c, body); err != nil {
				return
			}
			var cmd bson.Raw
			switch op {
			case 2004: // OP_QUERY: flags, collection name, skip, return
				i := 4
				for i < len(body) && body[i] != 0 {
					i++
				}
				cmd = bson.Raw(body[i+9:])
			case 2013: // OP_MSG: flags, a kind-0 section
				cmd = bson.Raw(body[5:])
			default:
				return
			}
			name := strings.ToLower(cmd.Index(0).Key())
			var r fakeReply
			switch name {
			case "ismaster", "hello":
				r.doc = append(bson.D{{Key: "ismaster", Value: true}, {Key: "helloOk", Value: true},
					{Key: "maxWireVersion", Value: int32(17)}, {Key: "minWireVersion", Value: int32(0)},
					{Key: "maxBsonObjectSize", Value: int32(16 << 20)}, {Key: "maxMessageSizeBytes", Value: int32(1<<31 - 1)},
					{Key: "ok", Value: 1.0}}, extraHello...)
			case "endsessions":
				r.doc = bson.D{{Key: "ok", Value: 1.0}}
			default:
				r = handle(name, cmd)
			}
			switch {
			case r.hangUp:
				return
			case r.stall:
				select {
				case <-done:
				case <-time.After(time.Minute):
				}
				return
			}
			doc, err := bson.Marshal(r.doc)
			if err != nil {
				panic(err)
			}
			var out []byte
			if op == 2004 { // OP_REPLY: header, flags, cursor id, start, one document
				out = make([]byte, 36)
				binary.LittleEndian.PutUint32(out[12:], 1)
				binary.LittleEndian.PutUint32(out[32:], 1)
			} else { // OP_MSG: header, flags, a kind-0 section
				out = make([]byte, 21)
				binary.LittleEndian.PutUint32(out[12:], 2013)
			}
			out = append(out, doc...)
			binary.LittleEndian.PutUint32(out[0:], uint32(len(out)))
			binary.LittleEndian.PutUint32(out[8:], reqID)
			if _, err := c.Write(out); err != nil {
				return
			}
		}
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() { defer wg.Done(); serve(c) }()
		}
	}()
	return ln.Addr().String()
}

// findReply is a find's answer: docs in the first batch, the cursor left open when id != 0.
func findReply(id int64, docs ...any) fakeReply {
	return fakeReply{doc: bson.D{{Key: "cursor", Value: bson.D{{Key: "id", Value: id}, {Key: "ns", Value: "db.c"},
		{Key: "firstBatch", Value: bson.A(docs)}}}, {Key: "ok", Value: 1.0}}}
}

// Ensure a server that answers find but never the getMore or killCursors after it cannot
// hold a query: the answer comes with what was read (the cursor's close gives up), or as a
// timeout when the documents asked for never come.
func TestQuery_ServerThatStopsAnswering(t *testing.T) {
	t.Parallel()
	addr := fakeMongo(t, nil, func(name string, _ bson.Raw) fakeReply {
		if name == "find" {
			return findReply(12345, bson.D{{Key: "_id", Value: 1}})
		}
		return fakeReply{stall: true} // getMore, killCursors
	})
	s := newService(t, dbcheck.Options{Timeout: time.Second, MaxTime: time.Second})
	in := dbcheck.QueryInput{ConnectionString: "mongodb://" + addr + "/?directConnection=true", Database: "db", Collection: "c", Limit: intp(1)}
	type result struct {
		res *dbcheck.QueryResult
		err error
	}
	run := func(in dbcheck.QueryInput) result {
		got := make(chan result, 1)
		go func() { res, err := s.Query(ctxT(t), in); got <- result{res, err} }()
		select {
		case r := <-got:
			return r
		case <-time.After(30 * time.Second):
			t.Fatal("the query is still waiting on a server that stopped answering")
			return result{}
		}
	}
	if r := run(in); r.err != nil || r.res.Count != 1 {
		t.Fatalf("limit 1: %+v, %v; want the one document read", r.res, r.err)
	}
	in.Limit = intp(5)
	if r := run(in); apperr.KindOf(r.err) != apperr.UpstreamTimeout && apperr.KindOf(r.err) != apperr.Upstream {
		t.Fatalf("limit 5: %+v, %v; want a timeout", r.res, r.err)
	}
}

// Ensure what a server sends is bounded by this side, not by what the server announces: a
// reply over the 16 MiB a MongoDB server sends fails the query (the server announced 2 GiB
// messages), and a server sending more documents than asked for is cut at the limit.
func TestQuery_ServerThatSendsTooMuch(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("A", 4<<20)
	var bigDocs, manyDocs []any
	for i := range 5 {
		bigDocs = append(bigDocs, bson.D{{Key: "_id", Value: i}, {Key: "big", Value: big}})
	}
	for i := range 500 {
		manyDocs = append(manyDocs, bson.D{{Key: "_id", Value: i}})
	}
	addr := fakeMongo(t, nil, func(name string, cmd bson.Raw) fakeReply {
		if name != "find" {
			return fakeReply{doc: bson.D{{Key: "ok", Value: 1.0}}}
		}
		if cmd.Lookup("find").StringValue() == "big" {
			return findReply(0, bigDocs...)
		}
		return findReply(0, manyDocs...)
	})
	s := newService(t, dbcheck.Options{})
	uri := "mongodb://" + addr + "/?directConnection=true"
	_, err := s.Query(ctxT(t), dbcheck.QueryInput{ConnectionString: uri, Database: "db", Collection: "big", Limit: intp(1000)})
	wantKind(t, err, apperr.Upstream, "over 17 MiB")
	res, err := s.Query(ctxT(t), dbcheck.QueryInput{ConnectionString: uri, Database: "db", Collection: "many", Limit: intp(5)})
	if err != nil || res.Count != 5 || len(res.Documents) != 5 {
		t.Fatalf("limit 5 against 500 sent: %+v, %v", res, err)
	}
}

// Ensure one connection string reaches at most 16 hosts, named in it or by its servers: a
// replica set listing 40 members gets connections to 16 at most, and a string naming 17 is
// refused before any connection.
func TestQuery_HostsBounded(t *testing.T) {
	t.Parallel()
	var dialed atomic.Int32
	var members bson.A
	for range 40 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
		go func() {
			first := true
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				if first {
					dialed.Add(1)
					first = false
				}
				c.Close()
			}
		}()
		members = append(members, ln.Addr().String())
	}
	var primary string
	primary = fakeMongo(t, bson.D{{Key: "setName", Value: "rs0"}, {Key: "hosts", Value: members}}, func(string, bson.Raw) fakeReply {
		return fakeReply{doc: bson.D{{Key: "ok", Value: 1.0}}}
	})
	s := newService(t, dbcheck.Options{Timeout: 2 * time.Second, MaxTime: time.Second})
	_, err := s.Query(ctxT(t), dbcheck.QueryInput{ConnectionString: "mongodb://" + primary + "/", Database: "db", Collection: "c"})
	if err == nil {
		t.Fatal("a query through a set whose members do not answer succeeded")
	}
	if n := dialed.Load(); n > 16 {
		t.Fatalf("one connection string reached %d hosts, want at most 16", n)
	}
	hosts := make([]string, 17)
	for i := range hosts {
		hosts[i] = fmt.Sprintf("127.0.0.1:%d", 20000+i)
	}
	_, err = s.Query(ctxT(t), dbcheck.QueryInput{ConnectionString: "mongodb://" + strings.Join(hosts, ",") + "/", Database: "db", Collection: "c"})
	wantKind(t, err, apperr.Invalid, "names 17 hosts; at most 16")
}

// Ensure a server's failures are told apart: a connection lost in the middle of a find is
// the server unreachable (502), not a refused query; a refused query's message carries no Go
// source frames of the server's code.
func TestQuery_ServerFailures(t *testing.T) {
	t.Parallel()
	addr := fakeMongo(t, nil, func(name string, cmd bson.Raw) fakeReply {
		if name != "find" {
			return fakeReply{doc: bson.D{{Key: "ok", Value: 1.0}}}
		}
		if cmd.Lookup("find").StringValue() == "lost" {
			return fakeReply{hangUp: true}
		}
		return fakeReply{doc: bson.D{{Key: "ok", Value: 0.0}, {Key: "code", Value: int32(1)}, {Key: "codeName", Value: "InternalError"},
			{Key: "errmsg", Value: "[msg_find.go:344 handler.handleMaxTimeMSError] [values.go:74 iterator.ConsumeValuesN[...]] [filter.go:71 common.filterDocumentPair] path element must not be empty"}}}
	})
	s := newService(t, dbcheck.Options{Timeout: 2 * time.Second})
	uri := "mongodb://" + addr + "/?directConnection=true"
	_, err := s.Query(ctxT(t), dbcheck.QueryInput{ConnectionString: uri, Database: "db", Collection: "lost"})
	wantKind(t, err, apperr.Upstream, "cannot query the MongoDB server")
	_, err = s.Query(ctxT(t), dbcheck.QueryInput{ConnectionString: uri, Database: "db", Collection: "refused"})
	wantKind(t, err, apperr.Invalid, "the server refused the query: (InternalError) path element must not be empty")
}
