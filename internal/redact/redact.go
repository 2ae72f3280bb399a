// Package redact hides secrets in text bound for a log line, an error or an answer.
package redact

import (
	"errors"
	"net/url"
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
	s = options(s)
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

// URI hides the password of uri, which is one URI and nothing else (a configuration value, a
// connection string), whatever the password holds (a space, a quote, "/" or "@"): everything
// between the user name's ":" and the last "@" goes. A URI without a password is left as it is.
// The secrets of its options are hidden too (options).
func URI(uri string) string {
	uri = options(uri)
	scheme, rest, ok := strings.Cut(uri, "://")
	if !ok {
		return uri
	}
	at := strings.LastIndex(rest, "@")
	if at < 0 {
		return uri
	}
	user, _, hasPassword := strings.Cut(rest[:at], ":")
	if !hasPassword {
		return uri
	}
	return scheme + "://" + user + ":****@" + rest[at+1:]
}

// Text hides the passwords of the URIs text quotes (Userinfo) and, wherever they appear, the
// passwords of uris as written and decoded: a parser's error may quote a password without its
// URI, and a password with a space or a quote ends Userinfo's match early.
func Text(text string, uris ...string) string {
	text = Userinfo(text)
	for _, uri := range uris {
		for _, secret := range append([]string{password(uri)}, optionValues(uri)...) {
			forms := []string{secret}
			if dec, err := url.PathUnescape(secret); err == nil {
				forms = append(forms, dec, url.QueryEscape(dec))
			}
			for _, f := range forms {
				if len(f) >= 3 { // shorter ones would hide ordinary text and protect little
					text = strings.ReplaceAll(text, f, "****")
				}
			}
		}
	}
	return text
}

// A connection string holds secrets outside its user info too: the options that hold a
// password (MongoDB's tlsCertificateKeyFilePassword and sslClientCertificateKeyPassword, a
// proxy's proxyPassword; option names are case-insensitive) and an AWS session token among
// authMechanismProperties ("AWS_SESSION_TOKEN:…", its ":" maybe escaped).
var (
	passwordOption = regexp.MustCompile(`(?i)([?&][a-z_]*password=)([^&#\s"'<>]+)`)
	sessionToken   = regexp.MustCompile(`(?i)(AWS_SESSION_TOKEN(?::|%3A))([^,&#\s"'<>]+)`)
)

// options hides the values of those options wherever s quotes them.
func options(s string) string {
	s = passwordOption.ReplaceAllString(s, "${1}****")
	return sessionToken.ReplaceAllString(s, "${1}****")
}

// optionValues are the values options hides in uri, as written.
func optionValues(uri string) []string {
	var out []string
	for _, re := range []*regexp.Regexp{passwordOption, sessionToken} {
		for _, m := range re.FindAllStringSubmatch(uri, -1) {
			out = append(out, m[2])
		}
	}
	return out
}

// password is what URI hides: the text between the user name's ":" and the last "@".
func password(uri string) string {
	_, rest, ok := strings.Cut(uri, "://")
	if !ok {
		return ""
	}
	at := strings.LastIndex(rest, "@")
	if at < 0 {
		return ""
	}
	_, pw, _ := strings.Cut(rest[:at], ":")
	return pw
}

// ErrUnescapedAt refuses a URI whose text after its scheme holds more than one "@": a user
// name or password written with an unescaped "@". Parsers split such a URI at a place of their
// own and then quote part of the password as a host name (and look it up), so it is refused
// before anything parses it.
var ErrUnescapedAt = errors.New(`holds more than one "@": write an "@" or "/" of the user name or password percent-encoded (%40, %2F)`)

// CheckAt returns ErrUnescapedAt for such a uri, else nil.
func CheckAt(uri string) error {
	if _, rest, ok := strings.Cut(uri, "://"); ok && strings.Count(rest, "@") > 1 {
		return ErrUnescapedAt
	}
	return nil
}
