package auth

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// FuzzParse feeds arbitrary bodies to the register and login decoders: they never panic, and
// an accepted body always holds a valid e-mail, a password within bcrypt's limit and a bounded
// name without control characters.
func FuzzParse(f *testing.F) {
	for _, s := range []string{`{}`, `{"email":"a@example.com","password":"secret1","name":"A"}`,
		`{"email":{"$ne":null}}`, `{"password":123}`, `{"name":null}`, `[]`, `"x"`, `{"email":"\u0000@x.io"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var fields map[string]json.RawMessage
		if json.Unmarshal(body, &fields) != nil {
			return
		}
		if in, msgs := ParseRegister(fields); len(msgs) == 0 {
			if !IsEmail(in.Email) || len(in.Password) > maxPasswordBytes || length(in.Password) < 6 || in.Name == "" ||
				utf8.RuneCountInString(in.Name) > maxNameLength || strings.ContainsFunc(in.Name, unicode.IsControl) {
				t.Fatalf("accepted invalid register input %+v", in)
			}
		}
		if in, msgs := ParseLogin(fields); len(msgs) == 0 && !IsEmail(in.Email) {
			t.Fatalf("accepted invalid login input %+v", in)
		}
	})
}
