package ai

import (
	"bytes"
	"strconv"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
)

// scanner reads a JSON document in one pass over its bytes, without reflection: the few fields
// the caller keeps are read, everything else is checked and skipped. It reads provider answers
// and chat request bodies.
//
// It is a fast path in front of a reflective decoder, and strict: whenever it is not sure to
// read a document exactly as that decoder would (a name written with escapes, a field given
// twice, a number that is not a plain integer, a value of another type, a string it keeps that
// is not valid UTF-8, deep nesting, anything malformed), it gives up and the document goes to
// the reflective decoder instead: decodeAnswer for answers (the Fuzz*Scan tests hold every
// answer the scanner accepts to its result), decodeFields for chat bodies (FuzzChatInput).
type scanner struct {
	b     []byte
	i     int
	depth int
	bad   bool
}

// maxScanDepth bounds nesting; deeper answers are left to decodeAnswer.
const maxScanDepth = 64

// fail gives up: every later read is a no-op, and ok reports false.
func (s *scanner) fail() {
	s.bad = true
	s.i = len(s.b)
}

// ok reports whether the whole input was one value read without a problem.
func (s *scanner) ok() bool {
	s.space()
	return !s.bad && s.i == len(s.b)
}

func (s *scanner) space() {
	for s.i < len(s.b) && s.b[s.i] <= ' ' { // every JSON token starts above the space
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// peek returns the next byte that is not white space, or 0 at the end.
func (s *scanner) peek() byte {
	s.space()
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

// null reads a null if one comes next, and reports whether it did.
func (s *scanner) null() bool {
	if s.peek() != 'n' {
		return false
	}
	s.literal("null")
	return true
}

func (s *scanner) literal(lit string) {
	if len(s.b)-s.i < len(lit) || string(s.b[s.i:s.i+len(lit)]) != lit {
		s.fail()
		return
	}
	s.i += len(lit)
}

// object reads an object (null: none), calling member with each member's name, which must
// read or skip the value. Names are given as they are written; one written with escapes gives
// up.
func (s *scanner) object(member func(name []byte)) {
	if s.null() {
		return
	}
	s.open('{')
	if s.peek() == '}' {
		s.close()
		return
	}
	for !s.bad {
		name := s.name()
		if s.peek() != ':' {
			s.fail()
			return
		}
		s.i++
		member(name)
		switch s.peek() {
		case ',':
			s.i++
		case '}':
			s.close()
			return
		default:
			s.fail()
			return
		}
	}
}

// array reads an array (null: none), calling elem for each element, which must read or skip
// it. It reports whether an array (not null) was read.
func (s *scanner) array(elem func()) bool {
	if s.null() {
		return false
	}
	s.open('[')
	if s.peek() == ']' {
		s.close()
		return !s.bad
	}
	for !s.bad {
		elem()
		switch s.peek() {
		case ',':
			s.i++
		case ']':
			s.close()
			return true
		default:
			s.fail()
		}
	}
	return false
}

func (s *scanner) open(c byte) {
	if s.peek() != c {
		s.fail()
		return
	}
	s.i++
	if s.depth++; s.depth > maxScanDepth {
		s.fail()
	}
}

func (s *scanner) close() {
	s.i++
	s.depth--
}

// name reads a member name written without escapes.
func (s *scanner) name() []byte {
	start, simple := s.stringSpan()
	if !simple {
		s.fail()
		return nil
	}
	return s.b[start+1 : s.i-1]
}

// strInto reads a string (null: "") into *dst, field (a bit) being seen for the first time in
// *seen.
func (s *scanner) strInto(seen *uint32, field uint32, dst *string) {
	if s.once(seen, field) {
		*dst = s.str()
	}
}

// str reads a string (null: "").
func (s *scanner) str() string {
	if s.null() {
		return ""
	}
	start, simple := s.stringSpan()
	if s.bad {
		return ""
	}
	if text := s.b[start+1 : s.i-1]; simple || bytes.IndexByte(text, '\\') < 0 && utf8.Valid(text) {
		return string(text)
	}
	out, err := jsontext.AppendUnquote(nil, s.b[start:s.i])
	if err != nil { // invalid UTF-8 is replaced by decodeAnswer: leave it to it
		s.fail()
		return ""
	}
	return string(out)
}

// stringSpan reads a string and returns where it starts (its opening quote); simple reports
// that it holds neither escapes nor bytes outside ASCII. Escapes are checked, and a \u escape
// of a surrogate half gives up.
func (s *scanner) stringSpan() (start int, simple bool) {
	if s.peek() != '"' {
		s.fail()
		return 0, false
	}
	start, simple = s.i, true
	for s.i++; s.i < len(s.b); s.i++ {
		if plainASCII[s.b[s.i]] {
			continue
		}
		switch c := s.b[s.i]; {
		case c == '"':
			s.i++
			return start, simple
		case c == '\\':
			simple = false
			if s.i++; s.i >= len(s.b) {
				s.fail()
				return 0, false
			}
			switch s.b[s.i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if len(s.b)-s.i < 5 || !isHex4(s.b[s.i+1:s.i+5]) || (s.b[s.i+1]|0x20 == 'd' && s.b[s.i+2] >= '8') {
					s.fail()
					return 0, false
				}
				s.i += 4
			default:
				s.fail()
				return 0, false
			}
		case c < 0x20:
			s.fail()
			return 0, false
		case c >= utf8.RuneSelf:
			simple = false
		}
	}
	s.fail()
	return 0, false
}

// plainASCII marks the bytes a string holds as they are: printable ASCII but the quote and the
// backslash.
var plainASCII = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

func isHex4(b []byte) bool {
	for _, c := range b[:4] {
		if !('0' <= c && c <= '9' || 'a' <= c|0x20 && c|0x20 <= 'f') {
			return false
		}
	}
	return true
}

// int reads an integer (null: 0) written as a plain integer that fits in an int64.
func (s *scanner) int() int64 {
	if s.null() {
		return 0
	}
	neg := s.peek() == '-'
	if neg {
		s.i++
	}
	start := s.i
	var n uint64
	for s.i < len(s.b) && '0' <= s.b[s.i] && s.b[s.i] <= '9' {
		if n > (1<<63)/10 {
			s.fail()
			return 0
		}
		n = n*10 + uint64(s.b[s.i]-'0')
		s.i++
	}
	digits := s.i - start
	switch {
	case digits == 0, digits > 1 && s.b[start] == '0', n > 1<<63, !neg && n == 1<<63:
		s.fail()
		return 0
	case s.i < len(s.b) && (s.b[s.i] == '.' || s.b[s.i] == 'e' || s.b[s.i] == 'E'):
		s.fail() // a fraction or an exponent: leave the conversion to decodeAnswer
		return 0
	}
	if neg {
		return -int64(n)
	}
	return int64(n)
}

// float reads a number (null: nil).
func (s *scanner) float() *float64 {
	if s.null() {
		return nil
	}
	if c := s.peek(); c != '-' && (c < '0' || c > '9') {
		s.fail()
		return nil
	}
	start := s.i
	s.number()
	if s.bad {
		return nil
	}
	f, err := strconv.ParseFloat(string(s.b[start:s.i]), 64)
	if err != nil { // out of range
		s.fail()
		return nil
	}
	return &f
}

// bool reads a boolean (null: false).
func (s *scanner) bool() bool {
	switch s.peek() {
	case 't':
		s.literal("true")
		return true
	case 'f':
		s.literal("false")
	case 'n':
		s.literal("null")
	default:
		s.fail()
	}
	return false
}

// skip checks and skips any value.
func (s *scanner) skip() {
	switch c := s.peek(); {
	case c == '{':
		s.object(func([]byte) { s.skip() })
	case c == '[':
		s.array(s.skip)
	case c == '"':
		s.stringSpan()
	case c == 't':
		s.literal("true")
	case c == 'f':
		s.literal("false")
	case c == 'n':
		s.literal("null")
	case c == '-' || '0' <= c && c <= '9':
		s.number()
	default:
		s.fail()
	}
}

// number checks and skips a number: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
func (s *scanner) number() {
	if s.i < len(s.b) && s.b[s.i] == '-' {
		s.i++
	}
	switch {
	case s.i < len(s.b) && s.b[s.i] == '0':
		s.i++
	case s.digits() == 0:
		s.fail()
		return
	}
	if s.i < len(s.b) && s.b[s.i] == '.' {
		s.i++
		if s.digits() == 0 {
			s.fail()
			return
		}
	}
	if s.i < len(s.b) && (s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		s.i++
		if s.i < len(s.b) && (s.b[s.i] == '+' || s.b[s.i] == '-') {
			s.i++
		}
		if s.digits() == 0 {
			s.fail()
		}
	}
}

func (s *scanner) digits() int {
	start := s.i
	for s.i < len(s.b) && '0' <= s.b[s.i] && s.b[s.i] <= '9' {
		s.i++
	}
	return s.i - start
}

// raw reads a value with read and returns its bytes as written.
func (s *scanner) raw(read func()) []byte {
	s.space()
	start := s.i
	read()
	if s.bad {
		return nil
	}
	return s.b[start:s.i]
}

// scanSlice reads an array of T with elem (null: nil; [] an empty, non-nil slice, as the JSON v2
// decoder makes them).
func scanSlice[T any](s *scanner, elem func(*T)) []T {
	var out []T
	if s.array(func() {
		out = append(out, *new(T))
		elem(&out[len(out)-1])
	}) && out == nil {
		out = []T{}
	}
	return out
}

// ints reads an object (null: none) whose members named names[i] are integers, into
// *fields[i]; other members are skipped.
func (s *scanner) ints(names []string, fields ...*int64) {
	var seen uint32
	s.object(func(name []byte) {
		for i, n := range names {
			if string(name) == n {
				if s.once(&seen, 1<<i) {
					*fields[i] = s.int()
				}
				return
			}
		}
		s.skip()
	})
}

// once reports whether field (a bit) is seen for the first time in *seen; a field given twice
// gives up, as decodeAnswer would keep the last one.
func (s *scanner) once(seen *uint32, field uint32) bool {
	if *seen&field != 0 {
		s.fail()
		return false
	}
	*seen |= field
	return true
}
