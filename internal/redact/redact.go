// Package redact hides secrets in text bound for a log line, an error or an answer.
package redact

import (
	"regexp"
	"strings"
)

// userinfo matches a URI's scheme and everything up to the last "@" of the URI (a run of
// characters without space or quote): a mis-typed password may hold "/" or "@", and no part
// of it may stay.
var userinfo = regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.-]*://)([^\s"'<>]*)@`)

// Userinfo hides the password of every URI in s, a URI or any text that contains some (an
// error message), keeping the user name: "mongodb://u:****@host". A URI without a password
// is left as it is.
func Userinfo(s string) string {
	if !strings.Contains(s, "://") {
		return s
	}
	return userinfo.ReplaceAllStringFunc(s, func(m string) string {
		parts := userinfo.FindStringSubmatch(m)
		user, _, hasPassword := strings.Cut(parts[2], ":")
		if !hasPassword {
			return m
		}
		return parts[1] + user + ":****@"
	})
}
