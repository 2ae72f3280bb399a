package mockserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"regexp"
	"strings"

	"go.yaml.in/yaml/v3"
)

// redacted replaces a secret in a recorded answer.
const redacted = "[REDACTED]"

// secretHeaders carry credentials; their values are redacted unless --record-secrets.
var secretHeaders = map[string]bool{"Authorization": true, "Proxy-Authorization": true, "X-Api-Key": true, "Cookie": true}

// secretWords are the parts of a name (a JSON key, a header, a form field) that make its value
// secret: tokens, secrets, passwords, keys.
const secretWords = `token|secret|password|passwd|passphrase|pwd|api[_-]?key|private[_-]?key|authorization|credential|session|signature`

// secretKey matches a name whose value is redacted.
var secretKey = regexp.MustCompile(`(?i)(` + secretWords + `)`)

// formSecret matches a name=value pair whose name is secret, in a form or text body, a query
// string or a URL fragment (?access_token=…, #access_token=…): the value ends at the next
// separator, or at what closes a URL quoted in text (<…>, "…").
var formSecret = regexp.MustCompile(`(?i)((?:^|[&\s?#;])[\w.\[\]-]*(?:` + secretWords + `)[\w.\[\]-]*=)[^&\s;#<>"']*`)

// urlSecretParam matches the query and fragment parameters of a URL that carry a credential
// under a name too short to redact in a body: an OAuth code, a signature, an API key.
var urlSecretParam = regexp.MustCompile(`(?i)([?&#](?:code|sig|key)=)[^&\s;#<>"']*`)

// userinfoPassword matches the password of a URL's userinfo (https://user:password@host).
var userinfoPassword = regexp.MustCompile(`(://[^/?#@\s:<>"']*:)[^/?#@\s<>"']*@`)

// colonSecret matches a "name: value" (YAML, headers) or "name = value" (.env, INI) line of a
// text body whose name is secret.
var colonSecret = regexp.MustCompile(`(?im)^([ \t]*(?:-[ \t]+)?["']?[\w.-]*(?:` + secretWords + `)[\w.-]*["']?[ \t]*[:=][ \t]*)(?:\S.*?)[ \t]*$`)

// jsonPairSecret matches a "name": value pair whose name is secret in text that is not JSON
// as a whole (newline-delimited JSON, JSON inside HTML).
var jsonPairSecret = regexp.MustCompile(`(?i)("[^"\\]*(?:` + secretWords + `)[^"\\]*"\s*:\s*)(?:"(?:[^"\\]|\\.)*"|[^\s,}\]{\["]+)`)

// jwtLike matches a JSON Web Token wherever it appears in a string.
var jwtLike = regexp.MustCompile(`eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]+`)

// wellKnownKey matches credentials whose format gives them away whatever names them: AWS
// access key ids, GitHub, Slack, Stripe secret, Google API, OpenAI/Anthropic and SendGrid
// keys, and PEM private keys.
var wellKnownKey = regexp.MustCompile(`\b(?:(?:AKIA|ASIA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA)[A-Z0-9]{16}` +
	`|gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,}` +
	`|xox[abprs]-[A-Za-z0-9-]{10,}` +
	`|[sr]k_(?:live|test)_[A-Za-z0-9]{16,}` +
	`|AIza[0-9A-Za-z_-]{35}` +
	`|sk-(?:ant-|proj-)?[A-Za-z0-9_-]{20,}` +
	`|SG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,})` +
	`|-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----`)

// authScheme matches an Authorization-style value: a scheme, then its credentials.
var authScheme = regexp.MustCompile(`(?i)\b(bearer|basic|token)([ \t]+)([A-Za-z0-9._~+/=-]{6,})`)

// redactString hides what looks like a credential in s whatever names it: JSON Web Tokens,
// well-known key formats, the credentials after Bearer, Basic or Token, secret-looking
// parameters of a query string or fragment, and a URL's password.
func redactString(s string) string {
	s = wellKnownKey.ReplaceAllString(s, redacted)
	s = jwtLike.ReplaceAllString(s, redacted)
	s = authScheme.ReplaceAllStringFunc(s, func(m string) string {
		p := authScheme.FindStringSubmatch(m)
		if strings.IndexFunc(p[3], func(r rune) bool { return r < 'a' || r > 'z' }) < 0 {
			return m // a lower-case word: prose ("bearer tokens"), not a credential
		}
		return p[1] + p[2] + redacted
	})
	s = formSecret.ReplaceAllString(s, "${1}"+redacted)
	s = urlSecretParam.ReplaceAllString(s, "${1}"+redacted)
	return userinfoPassword.ReplaceAllString(s, "${1}"+redacted+"@")
}

// redactText hides secrets in a body that is neither JSON nor YAML as a whole: what
// redactString hides, the values of secret-looking "name: value" lines, and of
// "name": value pairs.
func redactText(s string) string {
	s = redactString(s)
	s = colonSecret.ReplaceAllString(s, "${1}"+redacted)
	return jsonPairSecret.ReplaceAllString(s, `${1}"`+redacted+`"`)
}

// redactNode replaces the values under secret-looking keys, and what redactString hides in
// any string, by [REDACTED]. It reports whether it changed anything.
func redactNode(n *yaml.Node, secret bool) bool {
	changed := false
	switch n.Kind {
	case yaml.DocumentNode, yaml.SequenceNode:
		for _, c := range n.Content {
			changed = redactNode(c, secret) || changed
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			// Everything under a secret key is secret: {"credentials": {"user": …}}.
			changed = redactNode(n.Content[i+1], secret || secretKey.MatchString(n.Content[i].Value)) || changed
		}
	case yaml.ScalarNode:
		if n.Tag == "!!null" || n.Tag == "!!bool" {
			return false
		}
		switch {
		case secret:
			n.Tag, n.Value, n.Style = "!!str", redacted, yaml.DoubleQuotedStyle
			return true
		case n.Tag == "!!str" || n.Tag == "":
			if v := redactString(n.Value); v != n.Value {
				n.Value = v
				return true
			}
		}
	}
	return changed
}

// parseJSONNode parses body as one JSON value into a YAML node, which keeps the keys in the
// order they came; ok is false when the body is not JSON.
func parseJSONNode(body []byte) (*yaml.Node, bool) {
	if !json.Valid(body) {
		return nil, false
	}
	var doc yaml.Node
	if yaml.Unmarshal(body, &doc) != nil || len(doc.Content) != 1 {
		return nil, false
	}
	return doc.Content[0], true
}

// redactYAML redacts every document of a YAML body as redactNode does; ok is false when the
// body is not YAML holding a mapping or a sequence (text, then, for redactText).
func redactYAML(body []byte) (out string, ok bool) {
	d := yaml.NewDecoder(bytes.NewReader(body))
	var docs []*yaml.Node
	structured := false
	for {
		var doc yaml.Node
		err := d.Decode(&doc)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return "", false
		}
		if len(doc.Content) == 1 && (doc.Content[0].Kind == yaml.MappingNode || doc.Content[0].Kind == yaml.SequenceNode) {
			structured = true
		}
		docs = append(docs, &doc)
	}
	if !structured {
		return "", false
	}
	changed := false
	for _, doc := range docs {
		changed = redactNode(doc, false) || changed
	}
	if !changed {
		return string(body), true
	}
	var buf bytes.Buffer
	e := yaml.NewEncoder(&buf)
	e.SetIndent(2)
	for _, doc := range docs {
		if err := e.Encode(doc); err != nil {
			return "", false
		}
	}
	if err := e.Close(); err != nil {
		return "", false
	}
	return buf.String(), true
}
