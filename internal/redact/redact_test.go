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

func TestURI(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ in, want string }{
		{"mongodb://user:s3cret@host:27017/db", "mongodb://user:****@host:27017/db"},
		{"mongodb://u:Sp ace-1@127.0.0.1:1/", "mongodb://u:****@127.0.0.1:1/"},
		{"mongodb://u:CfgQ'uote\"<x>@h/", "mongodb://u:****@h/"},
		{"http://u:Sup3r@Secret/Tail@127.0.0.1:99/v1", "http://u:****@127.0.0.1:99/v1"},
		{"mongodb://host/db", "mongodb://host/db"},
		{"mongodb://onlyuser@host/db", "mongodb://onlyuser@host/db"},
		{"not a uri: a:b@c", "not a uri: a:b@c"},
	} {
		if got := URI(tt.in); got != tt.want {
			t.Errorf("URI(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestText(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ text, uri, want string }{
		// A quoted value Userinfo cannot end, and the value itself named.
		{`"mongodb://u:Sp ace-1@h/" refused`, "mongodb://u:Sp ace-1@h/", `"mongodb://u:****@h/" refused`},
		// A parser quoting the password decoded, or escaped.
		{"bad escape in p@ss/word", "mongodb://u:p%40ss%2Fword@h/", "bad escape in ****"},
		{"field p%40ss+w", "mongodb://u:p@ss w@h/", "field ****"},
		// Short passwords are left: they would hide ordinary words.
		{"a ab", "mongodb://u:ab@h/", "a ab"},
		{"nothing to hide", "mongodb://h/", "nothing to hide"},
	} {
		if got := Text(tt.text, tt.uri); got != tt.want {
			t.Errorf("Text(%q, %q) = %q, want %q", tt.text, tt.uri, got, tt.want)
		}
	}
}

func TestCheckAt(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		uri  string
		want bool
	}{
		{"mongodb://u:p%40ss@h/", false},
		{"mongodb://h/", false},
		{"mongodb://u:Sup3r@SecretTail/more@127.0.0.1:1/", true},
		{"http://u:p@ss@h/v1", true},
		{"user@example.com and user2@example.com", false},
	} {
		if got := CheckAt(tt.uri) == ErrUnescapedAt; got != tt.want {
			t.Errorf("CheckAt(%q) refuses: %v, want %v", tt.uri, got, tt.want)
		}
	}
}

// Ensure no password survives URI, whatever it holds, and Text hides it wherever it is quoted.
func FuzzURI(f *testing.F) {
	for _, pw := range []string{"s3cret", "p@ss", "pa/ss", "a:b", "%zz", "x?y#z", "sp ace", `q"u'o<t>e`} {
		f.Add(pw)
	}
	f.Fuzz(func(t *testing.T, pw string) {
		if len(pw) < 4 || strings.Contains("mongodb://user:****@host/db", pw) {
			return // a short password may occur by chance elsewhere
		}
		uri := "mongodb://user:" + pw + "@host/db"
		if out := URI(uri); strings.Contains(out, pw) {
			t.Fatalf("URI(%q) = %q keeps the password", uri, out)
		}
		if out := Text("refused "+uri+" and "+pw, uri); strings.Contains(out, pw) {
			t.Fatalf("Text kept the password %q: %q", pw, out)
		}
	})
}

// Ensure a connection string's other secrets, its options that hold a password or a token,
// are hidden like its password, wherever the URI is quoted.
func TestOptionSecrets(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ in, want string }{
		{"mongodb://h/?tlsCertificateKeyFilePassword=TopSecretPw&w=1", "mongodb://h/?tlsCertificateKeyFilePassword=****&w=1"},
		{"mongodb://h/?w=1&TLSCERTIFICATEKEYFILEPASSWORD=TopSecretPw", "mongodb://h/?w=1&TLSCERTIFICATEKEYFILEPASSWORD=****"},
		{"mongodb://h/?sslClientCertificateKeyPassword=TopSecretPw", "mongodb://h/?sslClientCertificateKeyPassword=****"},
		{"mongodb://h/?proxyHost=p&proxyUsername=u&proxyPassword=TopSecretPw", "mongodb://h/?proxyHost=p&proxyUsername=u&proxyPassword=****"},
		{"mongodb://k:s@h/?authMechanism=MONGODB-AWS&authMechanismProperties=AWS_SESSION_TOKEN:TopSecretTok",
			"mongodb://k:****@h/?authMechanism=MONGODB-AWS&authMechanismProperties=AWS_SESSION_TOKEN:****"},
		{"mongodb://h/?authMechanismProperties=SERVICE_NAME:db,AWS_SESSION_TOKEN:TopSecretTok,X:y",
			"mongodb://h/?authMechanismProperties=SERVICE_NAME:db,AWS_SESSION_TOKEN:****,X:y"},
		{"mongodb://h/?authMechanismProperties=AWS_SESSION_TOKEN%3ATopSecretTok", "mongodb://h/?authMechanismProperties=AWS_SESSION_TOKEN%3A****"},
		{"mongodb://h/?replicaSet=rs0&appName=passwordless", "mongodb://h/?replicaSet=rs0&appName=passwordless"},
	} {
		if got := URI(tt.in); got != tt.want {
			t.Errorf("URI(%q) = %q, want %q", tt.in, got, tt.want)
		}
		text := `store: ping "` + tt.in + `": server selection error`
		want := `store: ping "` + tt.want + `": server selection error`
		if got := Userinfo(text); got != want {
			t.Errorf("Userinfo(%q) = %q, want %q", text, got, want)
		}
		if got := Text(text, tt.in); got != want {
			t.Errorf("Text(%q) = %q, want %q", text, got, want)
		}
	}
	// A parser quoting the option's value alone.
	if got := Text("bad value TopSecretPw", "mongodb://h/?tlsCertificateKeyFilePassword=TopSecretPw"); got != "bad value ****" {
		t.Errorf("Text kept the option's value: %q", got)
	}
}
