package ai

import (
	"bufio"
	"bytes"
	"io"
)

// maxEventBytes bounds one server-sent event (a line, and the data of an event).
const maxEventBytes = 1 << 20

// sseReader reads server-sent events (the text/event-stream format of the WHATWG HTML
// standard): "event:" and "data:" fields, a blank line ending an event, comments ignored;
// lines end with LF or CRLF.
type sseReader struct {
	sc *bufio.Scanner
}

func newSSEReader(r io.Reader) *sseReader {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), maxEventBytes)
	return &sseReader{sc: sc}
}

// next returns the next event with data. At the end of the body it returns io.EOF; a body cut
// inside an event returns io.ErrUnexpectedEOF.
func (r *sseReader) next() (name string, data []byte, err error) {
	var buf []byte
	hasData, partial := false, false
	for r.sc.Scan() {
		line := r.sc.Bytes()
		if len(line) == 0 {
			if hasData {
				return name, buf, nil
			}
			name, partial = "", false
			continue
		}
		partial = true
		if line[0] == ':' {
			continue
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(field) {
		case "event":
			name = string(value)
		case "data":
			if hasData {
				buf = append(buf, '\n')
			}
			if len(buf)+len(value) > maxEventBytes {
				return "", nil, bufio.ErrTooLong
			}
			buf, hasData = append(buf, value...), true
		}
	}
	if err := r.sc.Err(); err != nil {
		return "", nil, err
	}
	if hasData || partial {
		return "", nil, io.ErrUnexpectedEOF
	}
	return "", nil, io.EOF
}
