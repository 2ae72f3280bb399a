package auth

import (
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// field is one JSON property of a request body: absent, null, a string, or another type.
type field struct {
	present  bool
	isString bool
	isNull   bool
	str      string
}

func getField(fields map[string]json.RawMessage, name string) field {
	raw, ok := fields[name] // exact, case-sensitive, as in JSON
	if !ok {
		return field{}
	}
	f := field{present: true}
	if strings.TrimSpace(string(raw)) == "null" {
		f.isNull = true
		return f
	}
	if err := json.Unmarshal(raw, &f.str); err == nil {
		f.isString = true
	}
	return f
}

// nonEmptyString applies @IsString() @IsNotEmpty() to the field named name, in the order
// class-validator reports them (bottom-to-top): absent, null and "" are empty.
func (f field) nonEmptyString(name string) []string {
	var msgs []string
	if !f.present || f.isNull || (f.isString && f.str == "") {
		msgs = append(msgs, name+" should not be empty")
	}
	if !f.isString {
		msgs = append(msgs, name+" must be a string")
	}
	return msgs
}

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

// maxPasswordBytes is bcrypt's input limit: longer passwords are refused, never truncated.
const maxPasswordBytes = 72

// ParseRegister checks a register body field by field and returns every failure in
// class-validator's wording, properties in declaration order, each property's rules
// bottom-to-top as class-validator runs them.
func ParseRegister(fields map[string]json.RawMessage) (RegisterInput, []string) {
	var msgs []string
	email, password, name := getField(fields, "email"), getField(fields, "password"), getField(fields, "name")
	in := RegisterInput{Email: strings.TrimSpace(email.str), Password: password.str, Name: name.str}
	if !email.isString || !IsEmail(in.Email) {
		msgs = append(msgs, "email must be an email")
	}
	switch {
	case !password.isString:
		msgs = append(msgs, "password must be longer than or equal to 6 characters", "password must be a string")
	case length(in.Password) < 6:
		msgs = append(msgs, "password must be longer than or equal to 6 characters")
	case len(in.Password) > maxPasswordBytes:
		msgs = append(msgs, "password must be shorter than or equal to 72 characters")
	}
	msgs = append(msgs, name.nonEmptyString("name")...)
	return in, msgs
}

// ParseLogin checks a login body as ParseRegister does.
func ParseLogin(fields map[string]json.RawMessage) (LoginInput, []string) {
	var msgs []string
	email, password := getField(fields, "email"), getField(fields, "password")
	in := LoginInput{Email: strings.TrimSpace(email.str), Password: password.str}
	if !email.isString || !IsEmail(in.Email) {
		msgs = append(msgs, "email must be an email")
	}
	msgs = append(msgs, password.nonEmptyString("password")...)
	return in, msgs
}
