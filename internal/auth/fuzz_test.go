package auth

import (
	"encoding/json"
	"testing"
)

// FuzzParse feeds arbitrary bodies to the register and login decoders: they never panic, and
// an accepted body always holds a valid e-mail and a password within bcrypt's limit.
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
			if !IsEmail(in.Email) || len(in.Password) > maxPasswordBytes || length(in.Password) < 6 || in.Name == "" {
				t.Fatalf("accepted invalid register input %+v", in)
			}
		}
		if in, msgs := ParseLogin(fields); len(msgs) == 0 && !IsEmail(in.Email) {
			t.Fatalf("accepted invalid login input %+v", in)
		}
	})
}
