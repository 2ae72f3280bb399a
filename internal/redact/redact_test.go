package redact

import (
	"strings"
	"testing"
)

func TestUserinfo(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ in, want string }{
		{"mongodb://user:s3cret@host:27017/db", "mongodb://user:****@host:27017/db"},
		{"mongodb+srv://u:p%40ss@cluster0.example.net/?x=1", "mongodb+srv://u:****@cluster0.example.net/?x=1"},
		{"connect mongodb://a:b@h1,h2/ failed", "connect mongodb://a:****@h1,h2/ failed"},
		{"mongodb://host/db", "mongodb://host/db"},
		{"mongodb://onlyuser@host/db", "mongodb://onlyuser@host/db"},
		// Mis-typed passwords: an unescaped "/" or "@" hides nothing of them.
		{"mongodb://u:pa/ss@host/db", "mongodb://u:****@host/db"},
		{"mongodb://u:p@ss@host/db", "mongodb://u:****@host/db"},
		// Any scheme, as a configuration error quotes the value it refused.
		{`config: mongodb.uri="postgres://u:hunter2@h/%zz": must start with mongodb://`, `config: mongodb.uri="postgres://u:****@h/%zz": must start with mongodb://`},
		// Two URIs, and the end of a quoted one.
		{`a="mongodb://x:1@h" b="mongodb://y:2@k"`, `a="mongodb://x:****@h" b="mongodb://y:****@k"`},
		{"no uri here: user@example.com", "no uri here: user@example.com"},
	} {
		if got := Userinfo(tt.in); got != tt.want {
			t.Errorf("Userinfo(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// Ensure no password written in a URI survives, whatever it holds.
func FuzzUserinfo(f *testing.F) {
	for _, pw := range []string{"s3cret", "p@ss", "pa/ss", "a:b", "%zz", "x?y#z"} {
		f.Add("mongodb", pw)
	}
	f.Fuzz(func(t *testing.T, scheme, pw string) {
		if len(pw) < 4 || strings.ContainsAny(pw, " \t\n\r\f\v\"'<>") || strings.ContainsAny(scheme, ":/@") {
			return // a password needs no space or quote; a short one may occur by chance elsewhere
		}
		scheme = "x" + strings.Map(func(r rune) rune {
			if r >= 'a' && r <= 'z' {
				return r
			}
			return -1
		}, scheme)
		out := Userinfo(`open "` + scheme + "://user:" + pw + `@host/db" failed`)
		if strings.Contains(out, pw) && !strings.Contains(`open "`+scheme+`://user:****@host/db" failed`, pw) {
			t.Fatalf("password %q left in %q", pw, out)
		}
	})
}
