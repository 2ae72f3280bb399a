package ai

import (
	"errors"
	"io"
	"strings"
	"testing"
)

// Ensure the event reader follows the text/event-stream rules the providers rely on.
func TestSSEReader(t *testing.T) {
	t.Parallel()
	type event struct{ name, data string }
	tests := []struct {
		name, in string
		want     []event
		wantErr  error
	}{
		{"LF", "data: a\n\nevent: x\ndata: b\n\n", []event{{"", "a"}, {"x", "b"}}, io.EOF},
		{"CRLF", "data: a\r\n\r\ndata: b\r\n\r\n", []event{{"", "a"}, {"", "b"}}, io.EOF},
		{"MultiLineData", "data: a\ndata: b\n\n", []event{{"", "a\nb"}}, io.EOF},
		{"CommentsAndNoSpace", ": ping\n\ndata:a\n\n", []event{{"", "a"}}, io.EOF},
		{"EventWithoutData", "event: ping\n\ndata: a\n\n", []event{{"", "a"}}, io.EOF},
		{"UnknownFieldsIgnored", "id: 1\nretry: 5\ndata: a\n\n", []event{{"", "a"}}, io.EOF},
		{"CutMidEvent", "data: a\n\ndata: b\n", []event{{"", "a"}}, io.ErrUnexpectedEOF},
		{"Empty", "", nil, io.EOF},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := newSSEReader(strings.NewReader(tt.in))
			var got []event
			var err error
			for {
				var name string
				var data []byte
				if name, data, err = r.next(); err != nil {
					break
				}
				got = append(got, event{name, string(data)})
			}
			if !errors.Is(err, tt.wantErr) || len(got) != len(tt.want) {
				t.Fatalf("got %q, %v; want %q, %v", got, err, tt.want, tt.wantErr)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("event %d = %q, want %q", i, got[i], tt.want[i])
				}
			}
		})
	}
	// An event larger than the bound is refused, not buffered.
	if _, _, err := newSSEReader(strings.NewReader("data: " + strings.Repeat("x", maxEventBytes+1) + "\n\n")).next(); err == nil {
		t.Error("an event past maxEventBytes was read")
	}
}
