package auth

import (
	"encoding/json"
	"strings"
	"unicode/utf8"

	"github.com/acme/app/internal/validate"
)

// length counts characters as class-validator does: runes, not counting variation selectors.
func length(s string) int {
	n := utf8.RuneCountInString(s)
	n -= strings.Count(s, "\uFE0E") + strings.Count(s, "\uFE0F")
	return n
}

// IsEmail reports whether s is an e-mail address by validator.js's default isEmail rules:
// no display name, a local part of at most 64 bytes, a fully qualified domain with an
// alphabetic top-level label (or xn--), no IP domain, at most 254 characters in all.
func IsEmail(s string) bool {
	if len(s) > 254 || strings.ContainsAny(s, " \t\r\n") {
		return false
	}
	at := strings.LastIndexByte(s, '@')
	if at <= 0 || at == len(s)-1 {
		return false
	}
	local, domain := s[:at], s[at+1:]
	if len(local) > 64 { // the domain is within the 254 checked above
		return false
	}
	if !validLocal(local) {
		return false
	}
	return isFQDN(domain)
}

func validLocal(local string) bool {
	if strings.HasPrefix(local, `"`) && strings.HasSuffix(local, `"`) && len(local) >= 2 {
		return !strings.ContainsAny(local[1:len(local)-1], `"\`)
	}
	if strings.HasPrefix(local, ".") || strings.HasSuffix(local, ".") || strings.Contains(local, "..") {
		return false
	}
	for _, r := range local {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		case strings.ContainsRune("!#$%&'*+-/=?^_`{|}~.", r):
		case r >= 0x80: // allow_utf8_local_part
		default:
			return false
		}
	}
	return true
}

func isFQDN(domain string) bool {
	if strings.HasSuffix(domain, ".") {
		return false
	}
	labels := strings.Split(domain, ".")
	if len(labels) < 2 {
		return false
	}
	tld := labels[len(labels)-1]
	if !strings.HasPrefix(strings.ToLower(tld), "xn--") {
		if utf8.RuneCountInString(tld) < 2 {
			return false
		}
		for _, r := range tld {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= 0x80) {
				return false
			}
		}
	}
	for _, l := range labels {
		if l == "" || len(l) > 63 || strings.HasPrefix(l, "-") || strings.HasSuffix(l, "-") {
			return false
		}
		for _, r := range l {
			switch {
			case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-':
			case r >= 0x80 && !(r >= 0xFF01 && r <= 0xFF5E): // IDN, but no full-width forms
			default:
				return false
			}
		}
	}
	return true
}

// normalizeEmail is the form e-mails are stored and looked up in.
func normalizeEmail(s string) string { return strings.ToLower(strings.TrimSpace(s)) }

// RegisterInput is the body of POST /api/auth/register.
type RegisterInput struct {
	Email    string
	Password string
	Name     string
}

// LoginInput is the body of POST /api/auth/login.
type LoginInput struct {
	Email    string
	Password string
}

// Bounds of a password: maxPasswordBytes is bcrypt's input limit (longer passwords are
// refused, never truncated).
const (
	minPasswordLength = 6
	maxPasswordBytes  = 72
)

// maxNameLength bounds a user's name: it is listed to admins and printed by `app users list`.
const maxNameLength = 100

// ParseRegister checks a register body field by field and returns every failure in
// class-validator's wording, properties in declaration order, each property's rules
// bottom-to-top as class-validator runs them.
func ParseRegister(fields map[string]json.RawMessage) (RegisterInput, []string) {
	var msgs []string
	email, emailOK := validate.String(fields["email"])
	password, passwordOK := validate.String(fields["password"])
	in := RegisterInput{Email: strings.TrimSpace(email), Password: password}
	// An address that could pass for another (a bidi override in a quoted local part) is not
	// taken for a new account; login reads addresses as they were registered.
	if !emailOK || !IsEmail(in.Email) || !validate.Displayable(in.Email) {
		msgs = append(msgs, validate.IsEmail("email"))
	}
	switch {
	case !passwordOK:
		msgs = append(msgs, validate.MinLength("password", minPasswordLength), validate.IsString("password"))
	case length(in.Password) < minPasswordLength:
		msgs = append(msgs, validate.MinLength("password", minPasswordLength))
	case len(in.Password) > maxPasswordBytes:
		msgs = append(msgs, validate.MaxLength("password", maxPasswordBytes))
	}
	var nameMsgs []string
	in.Name, nameMsgs = validate.RequiredString("name", fields["name"])
	if len(nameMsgs) == 0 {
		switch {
		case utf8.RuneCountInString(in.Name) > maxNameLength:
			nameMsgs = append(nameMsgs, validate.MaxLength("name", maxNameLength))
		case !validate.Displayable(in.Name):
			// A terminal would run an escape sequence printed by `app users list`, and a bidi
			// override or an invisible character would make the name pass for another.
			nameMsgs = append(nameMsgs, "name must not contain control characters")
		}
	}
	return in, append(msgs, nameMsgs...)
}

// ParseLogin checks a login body as ParseRegister does.
func ParseLogin(fields map[string]json.RawMessage) (LoginInput, []string) {
	var msgs []string
	email, emailOK := validate.String(fields["email"])
	in := LoginInput{Email: strings.TrimSpace(email)}
	if !emailOK || !IsEmail(in.Email) {
		msgs = append(msgs, validate.IsEmail("email"))
	}
	var passwordMsgs []string
	in.Password, passwordMsgs = validate.RequiredString("password", fields["password"])
	return in, append(msgs, passwordMsgs...)
}
