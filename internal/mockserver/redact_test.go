package mockserver

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Ensure the recorder redacts secrets whatever carries them: JSON declared as text, as
// nothing or as YAML, YAML and text "name: value" lines, tokens in the query or fragment of a
// URL-valued header, and bearer tokens or well-known key formats under any name; and that
// --record-secrets keeps them all, while ordinary values are kept either way.
func TestRecord_RedactsWhateverCarriesIt(t *testing.T) {
	t.Parallel()
	type exchange struct {
		contentType string // "-": none
		headers     []string
		body        string
	}
	exchanges := map[string]exchange{
		"/json-as-text": {"text/plain", nil, `{"user":"ada","password":"pw_plain_1"}`},
		"/json-no-type": {"-", nil, `{"user":"bob","token":"tok_notype_2"}`},
		"/json-as-yaml": {"application/yaml", nil, `{"user":"cy","apiKey":"key_yamljson_3"}`},
		"/yaml": {"application/yaml", nil, "user: dee\npassword: hunter2_yaml_4\ncredentials:\n  login: cred_login_5\n  pin: 1234\n" +
			"---\nsession_id: sess_doc2_6\nnote: kept\n"},
		"/text":        {"text/plain", nil, "user: eve\npassword: pw_text_7\nclient_secret = sec_text_8\n"},
		"/ndjson":      {"application/x-ndjson", nil, "{\"n\":1,\"token\":\"tok_nd_9\"}\n{\"n\":2}\n"},
		"/location":    {"text/plain", []string{"Location", "https://app.example/cb#access_token=at_SECRET123&token_type=bearer&state=keepstate"}, "moved"},
		"/link":        {"text/plain", []string{"Link", `<https://api.example/items?page=2&access_token=LINKTOK>; rel="next"`}, "linked"},
		"/content-loc": {"text/plain", []string{"Content-Location", "/x?api_key=CLKEY&code=OAUTHCODE", "Refresh", "5; url=https://app.example/next?session=REFSESS"}, "moved"},
		"/userinfo":    {"text/plain", []string{"Content-Location", "https://ann:URLPASS@db.example/x"}, "moved"},
		"/values": {"application/json", []string{"X-Debug", "Bearer hdr_opaque_10"}, `{"auth":"Bearer opaque_abcdef","key":"AKIAIOSFODNN7EXAMPLE",` +
			`"gh":"ghp_0123456789abcdefghijABCDEFGHIJ012345","note":"bearer tokens are fine","next":"https://api.example/x?page=3&access_token=NEXTTOK",` +
			`"pem":"-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA\n-----END RSA PRIVATE KEY-----"}`},
	}
	secrets := []string{"pw_plain_1", "tok_notype_2", "key_yamljson_3", "hunter2_yaml_4", "cred_login_5", "sess_doc2_6", "pw_text_7",
		"sec_text_8", "tok_nd_9", "at_SECRET123", "LINKTOK", "CLKEY", "OAUTHCODE", "REFSESS", "URLPASS", "hdr_opaque_10", "opaque_abcdef",
		"AKIAIOSFODNN7EXAMPLE", "ghp_0123456789", "NEXTTOK", "MIIEpAIBAAKCAQEA"}
	ordinary := []string{"ada", "bob", "dee", "eve", "keepstate", "page=2", "page=3", `rel=\"next\"`, "bearer tokens are fine", "note: kept", "ann:", "db.example"}
	_, target := upstream(t, func(w http.ResponseWriter, r *http.Request) {
		ex, ok := exchanges[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		if ex.contentType == "-" {
			w.Header()["Content-Type"] = nil // no sniffing: no Content-Type at all
		} else {
			w.Header().Set("Content-Type", ex.contentType)
		}
		for i := 0; i+1 < len(ex.headers); i += 2 {
			w.Header().Set(ex.headers[i], ex.headers[i+1])
		}
		w.WriteHeader(http.StatusCreated) // a Location on a 201 is not followed by the client
		w.Write([]byte(ex.body))
	})
	for _, tc := range []struct {
		name    string
		secrets bool
	}{
		{"Redacted", false},
		{"RecordSecrets", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rec := filepath.Join(t.TempDir(), "rec.yaml")
			_, hs, _ := newTestServer(t, "", "", func(o *Options) { o.Target = target; o.Record = rec; o.RecordSecrets = tc.secrets })
			for p := range exchanges {
				if a := do(t, "GET", hs.URL+p, ""); a.status != http.StatusCreated {
					t.Fatalf("GET %s through the recorder: %d %s", p, a.status, a.body)
				}
			}
			b, err := os.ReadFile(rec)
			if err != nil {
				t.Fatal(err)
			}
			text := string(b)
			for _, s := range secrets {
				if got, want := strings.Contains(text, s), tc.secrets; got != want {
					t.Errorf("%q in the recording: %v, want %v", s, got, want)
				}
			}
			for _, s := range ordinary {
				if !strings.Contains(text, s) {
					t.Errorf("ordinary %q lost from the recording", s)
				}
			}
			if t.Failed() {
				t.Logf("recording:\n%s", text)
			}
			// The recording replays; JSON declared as text stays JSON, as text.
			_, replay, _ := newTestServer(t, "replay.yaml", text, nil)
			a := do(t, "GET", replay.URL+"/json-as-text", "")
			var v map[string]string
			if err := json.Unmarshal([]byte(a.body), &v); err != nil || v["user"] != "ada" || !strings.HasPrefix(a.header.Get("Content-Type"), "text/plain") {
				t.Fatalf("replay of /json-as-text: %d %v %q (%v)", a.status, a.header, a.body, err)
			}
		})
	}
}

// Ensure redaction is stable: what it leaves is not redacted again, and ordinary text is
// left as it is.
func TestRedactText_Stable(t *testing.T) {
	t.Parallel()
	for _, in := range []string{
		"plain words, bearer tokens explained",
		"user=ada&password=x&state=y",
		"https://u:p@h.example/a?access_token=x#id_token=y",
		`{"token": "x", "n": 1}`,
		"Authorization: Basic dXNlcjpwYXNz\n",
	} {
		once := redactText(in)
		if twice := redactText(once); twice != once {
			t.Errorf("redactText(%q): %q, then %q", in, once, twice)
		}
	}
	if in := "plain words, bearer tokens explained"; redactText(in) != in {
		t.Errorf("prose changed: %q", redactText(in))
	}
}

// FuzzRedactText checks that redaction never panics and is stable: redacting its own output
// changes nothing.
func FuzzRedactText(f *testing.F) {
	for _, s := range []string{
		"password: hunter2", `{"auth":"Bearer opaque_abcdef"}`, "<https://a.example/?access_token=T>; rel=next",
		"https://app.example/cb#access_token=at_SECRET123&state=s", "AKIAIOSFODNN7EXAMPLE", "5; url=/x?session=s",
		"https://u:p@h/", "-----BEGIN PRIVATE KEY-----\nx\n-----END PRIVATE KEY-----",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		once := redactText(s)
		if twice := redactText(once); twice != once {
			t.Fatalf("not stable: %q → %q → %q", s, once, twice)
		}
	})
}
