package apperr

import (
	"errors"
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
