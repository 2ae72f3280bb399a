package store

import (
	"net/url"
	"regexp"
	"strings"
)

var userinfo = regexp.MustCompile(`(mongodb(?:\+srv)?://)([^@/]*)@`)

// Redact hides the password of a MongoDB connection string, in a URI or in any text that
// contains one (an error message), keeping the user name: "mongodb://u:****@host".
func Redact(s string) string {
	return userinfo.ReplaceAllStringFunc(s, func(m string) string {
		parts := userinfo.FindStringSubmatch(m)
		info := parts[2]
		if i := strings.IndexByte(info, ':'); i >= 0 {
			user := info[:i]
			if u, err := url.PathUnescape(user); err == nil {
				user = url.PathEscape(u)
			}
			return parts[1] + user + ":****@"
		}
		return m
	})
}
