package apperr

import (
	"errors"
	"fmt"
	"testing"
)

// Ensure Error joins the messages and the cause once: a message that already ends with its
// cause's text does not repeat it.
func TestError_Text(t *testing.T) {
	t.Parallel()
	cause := errors.New("connection closed by the provider")
	for _, tc := range []struct {
		err  *Error
		want string
	}{
		{E(Invalid, "a", "b"), "a; b"},
		{Wrap(Upstream, cause), "connection closed by the provider"},
		{Wrap(Upstream, cause, "openai failed"), "openai failed: connection closed by the provider"},
		{Wrap(Upstream, cause, "openai failed mid-stream: connection closed by the provider"), "openai failed mid-stream: connection closed by the provider"},
	} {
		if got := tc.err.Error(); got != tc.want {
			t.Errorf("Error() = %q, want %q", got, tc.want)
		}
	}
}

// Ensure a parameter and a code travel with the error through wrapping (the HTTP layer finds
// them where the service set them) and stay out of its text, which is the messages' alone.
func TestError_ParamAndCode(t *testing.T) {
	t.Parallel()
	e := &Error{Kind: Invalid, Messages: []string{"Invalid 'n': only 1 is supported."}, Param: "n", Code: "unsupported_parameter"}
	wrapped := fmt.Errorf("parse the request: %w", e)
	got := As(wrapped)
	if got == nil || got.Param != "n" || got.Code != "unsupported_parameter" || KindOf(wrapped) != Invalid {
		t.Fatalf("As(wrapped) = %+v", got)
	}
	if e.Error() != "Invalid 'n': only 1 is supported." {
		t.Errorf("Error() = %q: the parameter or code leaked into the text", e.Error())
	}
	if As(errors.New("plain")) != nil || KindOf(errors.New("plain")) != Internal {
		t.Error("a plain error is not an *Error of kind Internal")
	}
}
