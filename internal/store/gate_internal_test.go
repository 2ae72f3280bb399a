package store

import (
	"encoding/binary"
	"math"
	"testing"

	"go.mongodb.org/mongo-driver/bson"
)

// opMsgOf builds an OP_MSG with flag bits fl, an optional document sequence before the body,
// and the body doc.
func opMsgOf(t testing.TB, fl uint32, seqFirst bool, doc bson.D) []byte {
	t.Helper()
	body, err := bson.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	msg := make([]byte, headerLen+4)
	binary.LittleEndian.PutUint32(msg[12:], opMsg)
	binary.LittleEndian.PutUint32(msg[16:], fl)
	if seqFirst {
		item, _ := bson.Marshal(bson.D{{Key: "q", Value: bson.D{}}})
		seq := binary.LittleEndian.AppendUint32([]byte{1}, uint32(4+len("updates\x00")+len(item)))
		seq = append(append(seq, "updates\x00"...), item...)
		msg = append(msg, seq...)
	}
	msg = append(append(msg, 0), body...)
	if fl&flagChecksum != 0 {
		msg = append(msg, 0, 0, 0, 0)
	}
	binary.LittleEndian.PutUint32(msg, uint32(len(msg)))
	return msg
}

// Ensure the gate tells write commands from the rest by the body's first key, wherever the
// body section stands, and takes nothing malformed or of another opcode for a write.
func TestCommandName(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		msg   []byte
		cmd   string
		write bool
	}{
		{"Update", opMsgOf(t, 0, false, bson.D{{Key: "update", Value: "c"}, {Key: "$db", Value: "d"}}), "update", true},
		{"FindAndModify", opMsgOf(t, 0, false, bson.D{{Key: "findAndModify", Value: "c"}}), "findAndModify", true},
		{"LegacyFindAndModify", opMsgOf(t, 0, false, bson.D{{Key: "findandmodify", Value: "c"}}), "findandmodify", true},
		{"DeleteAfterSequence", opMsgOf(t, 0, true, bson.D{{Key: "delete", Value: "c"}}), "delete", true},
		{"WithChecksum", opMsgOf(t, flagChecksum, false, bson.D{{Key: "insert", Value: "c"}}), "insert", true},
		{"Find", opMsgOf(t, 0, false, bson.D{{Key: "find", Value: "c"}}), "find", false},
		{"Hello", opMsgOf(t, 0, false, bson.D{{Key: "hello", Value: 1}}), "hello", false},
		{"EmptyBody", opMsgOf(t, 0, false, bson.D{}), "", false},
		{"OpQuery", func() []byte {
			m := opMsgOf(t, 0, false, bson.D{{Key: "update", Value: "c"}})
			binary.LittleEndian.PutUint32(m[12:], 2004)
			return m
		}(), "", false},
		{"Truncated", opMsgOf(t, 0, false, bson.D{{Key: "update", Value: "c"}})[:24], "", false},
		{"HeaderOnly", make([]byte, headerLen), "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := string(commandName(tt.msg)); got != tt.cmd {
				t.Errorf("commandName = %q, want %q", got, tt.cmd)
			}
			if got := isWrite(tt.msg); got != tt.write {
				t.Errorf("isWrite = %v, want %v", got, tt.write)
			}
		})
	}
}

// Fuzz the parser the gate runs on every message a client sends: it never panics, and a name
// it returns lies inside the message.
func FuzzCommandName(f *testing.F) {
	f.Add(opMsgOf(f, 0, false, bson.D{{Key: "update", Value: "c"}}))
	f.Add(opMsgOf(f, 0, true, bson.D{{Key: "delete", Value: "c"}}))
	f.Add(opMsgOf(f, flagChecksum|flagMoreToCome, false, bson.D{{Key: "insert", Value: 1}}))
	f.Fuzz(func(t *testing.T, msg []byte) {
		name := commandName(msg)
		if len(name) > len(msg) {
			t.Fatalf("a name of %d bytes from a message of %d", len(name), len(msg))
		}
		_ = flags(msg)
		_ = isWrite(msg)
	})
}

// Ensure hasNaN finds a NaN at any depth of the body, past a document sequence and beside a
// checksum, and nothing in a message without one or in a malformed message; and that it never
// panics on arbitrary bytes (the gate reads whatever a client sends).
func FuzzHasNaN(f *testing.F) {
	nan := math.NaN()
	cases := []struct {
		fl       uint32
		seqFirst bool
		doc      bson.D
		want     bool
	}{
		{0, false, bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: bson.D{{Key: "v", Value: nan}}}}, true},
		{flagChecksum, true, bson.D{{Key: "update", Value: "c"}, {Key: "x", Value: bson.A{1, bson.A{bson.D{{Key: "y", Value: nan}}}}}}, true},
		{0, true, bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: bson.D{{Key: "v", Value: math.Inf(1)}}}}, false},
		{0, false, bson.D{{Key: "ping", Value: 1.0}}, false},
	}
	for _, tc := range cases {
		msg := opMsgOf(f, tc.fl, tc.seqFirst, tc.doc)
		if got := hasNaN(msg); got != tc.want {
			f.Errorf("hasNaN(%v) = %v, want %v", tc.doc, got, tc.want)
		}
		if hasNaN(msg[:len(msg)-3]) {
			f.Errorf("hasNaN of a message cut short found a NaN")
		}
		f.Add(msg)
	}
	f.Fuzz(func(t *testing.T, msg []byte) {
		hasNaN(msg)
		if len(msg) >= headerLen {
			nanRefusal(msg, nil)
		}
	})
}
