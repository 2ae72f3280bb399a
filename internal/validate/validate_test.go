package validate

import (
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// Ensure missing and null are told apart from every other JSON value, whitespace around null
// included.
func TestIsNull(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		raw  json.RawMessage
		want bool
	}{
		{nil, true},
		{json.RawMessage(`null`), true},
		{json.RawMessage(" null\n"), true},
		{json.RawMessage(`"null"`), false},
		{json.RawMessage(`0`), false},
		{json.RawMessage(`""`), false},
		{json.RawMessage(`{}`), false},
		{json.RawMessage(`[]`), false},
		{json.RawMessage(`false`), false},
	} {
		if got := IsNull(tc.raw); got != tc.want {
			t.Errorf("IsNull(%q) = %v, want %v", tc.raw, got, tc.want)
		}
	}
}

// Ensure String and Integer accept only their own JSON type, and never null.
func TestStringAndInteger(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		raw       string // "" for a missing property
		str       string
		strOK     bool
		integer   float64
		integerOK bool
	}{
		{raw: ""},
		{raw: "null"},
		{raw: `""`, strOK: true},
		{raw: `"a b"`, str: "a b", strOK: true},
		{raw: `"\u0041"`, str: "A", strOK: true},
		{raw: `7`, integer: 7, integerOK: true},
		{raw: `-2.0`, integer: -2, integerOK: true},
		{raw: `1e3`, integer: 1000, integerOK: true},
		{raw: `1.5`},
		{raw: `"7"`, str: "7", strOK: true},
		{raw: `true`},
		{raw: `[1]`},
		{raw: `{"a":1}`},
	} {
		var raw json.RawMessage
		if tc.raw != "" {
			raw = json.RawMessage(tc.raw)
		}
		if s, ok := String(raw); s != tc.str || ok != tc.strOK {
			t.Errorf("String(%s) = %q, %v; want %q, %v", tc.raw, s, ok, tc.str, tc.strOK)
		}
		if f, ok := Integer(raw); f != tc.integer || ok != tc.integerOK {
			t.Errorf("Integer(%s) = %v, %v; want %v, %v", tc.raw, f, ok, tc.integer, tc.integerOK)
		}
	}
}

// Ensure RequiredString reports as @IsString() @IsNotEmpty() do, in class-validator's order.
func TestRequiredString(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		raw  string // "" for a missing property
		want string
		msgs []string
	}{
		{raw: "", msgs: []string{"name should not be empty", "name must be a string"}},
		{raw: "null", msgs: []string{"name should not be empty", "name must be a string"}},
		{raw: `""`, msgs: []string{"name should not be empty"}},
		{raw: `" "`, want: " "},
		{raw: `"Ada"`, want: "Ada"},
		{raw: `0`, msgs: []string{"name must be a string"}},
		{raw: `false`, msgs: []string{"name must be a string"}},
		{raw: `["Ada"]`, msgs: []string{"name must be a string"}},
	} {
		var raw json.RawMessage
		if tc.raw != "" {
			raw = json.RawMessage(tc.raw)
		}
		got, msgs := RequiredString("name", raw)
		if got != tc.want || !slices.Equal(msgs, tc.msgs) {
			t.Errorf("RequiredString(%s) = %q, %q; want %q, %q", tc.raw, got, msgs, tc.want, tc.msgs)
		}
	}
}

// Ensure each message is worded exactly as clients see it on the wire.
func TestWording(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ got, want string }{
		{NotEmpty("name"), "name should not be empty"},
		{IsString("messages.0.content"), "messages.0.content must be a string"},
		{IsArray("messages"), "messages must be an array"},
		{IsObject("filter"), "filter must be an object"},
		{EachObject("properties"), "each value in properties must be an object"},
		{EachNested("messages"), "each value in nested property messages must be either object or array"},
		{IsInt("limit"), "limit must be an integer number"},
		{IsNumber("temperature"), "temperature must be a number conforming to the specified constraints"},
		{IsBoolean("stream"), "stream must be a boolean value"},
		{IsEmail("email"), "email must be an email"},
		{Min("limit", 1), "limit must not be less than 1"},
		{Min("temperature", 0.0), "temperature must not be less than 0"},
		{Max("maxTokens", 1_000_000), "maxTokens must not be greater than 1000000"},
		{Max("temperature", 2.0), "temperature must not be greater than 2"},
		{Max("temperature", 0.5), "temperature must not be greater than 0.5"},
		{MinLength("password", 6), "password must be longer than or equal to 6 characters"},
		{MaxLength("name", 100), "name must be shorter than or equal to 100 characters"},
		{IsIn("messages.1.role", []string{"user", "assistant"}), "messages.1.role must be one of the following values: user, assistant"},
		{Matches("model", regexp.MustCompile(`^[a-z]+$`)), "model must match ^[a-z]+$ regular expression"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}

// Ensure names that would change or hide what is shown around them are not displayable, and
// names in any script, with emoji, are.
func TestDisplayable(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		s    string
		want bool
	}{
		{"Ada Lovelace", true}, {"José Núñez", true}, {"محمد", true}, {"می‌خواهم", true}, // ZWNJ in Persian
		{"李雷", true}, {"👩‍💻 dev", true}, {"🏴󠁧󠁢󠁳󠁣󠁴󠁿", true}, // ZWJ sequence, tag sequence
		{"a\x1b[31mb", false}, {"a\u009b2Jb", false}, {"a\u0085b", false}, {"a\x00b", false},
		{"\u202eevil txt.exe", false}, {"a\u2066b\u2069", false}, {"a\u200fb", false}, {"a\u061cb", false},
		{"Admin\u200b", false}, {"\u3164", false}, {"a\u00adb", false}, {"a\ufeffb", false}, {"a\u2028b", false},
		{"a\xffb", false},
		// Invisible characters beyond the common ones: tags outside a flag, the interlinear
		// annotation marks, deprecated format characters, the musical beam marks, the Khmer
		// inherent vowels, the blank Braille pattern, variation selectors after letters, a flag's
		// tags without their end.
		{"alice\U000E0041", false}, {"Alice\U000E0001", false}, {"Alice\U000E007F", false}, {"Alice\u206a", false},
		{"Alice\u206f", false}, {"Alice\ufff9", false}, {"Alice\ufffb", false}, {"Alice\U0001D173", false},
		{"Alice\u17b4", false}, {"Alice\u2800", false}, {"Alice\ufe00", false}, {"Alice\u180b", false},
		{"Alice\U000E0100", false}, {"\U0001F3F4\U000E0067\U000E0062", false}, {"\U0001F3F4\U000E0041 Alice", false},
		// Emoji presentation selectors, bare black flags and a flag next to text stay allowed.
		{"\u2764\ufe0f", true}, {"\u2764\ufe0e", true}, {"\U0001F3F4\U0001F3F4", true},
		{"Scot \U0001F3F4\U000E0067\U000E0062\U000E0073\U000E0063\U000E0074\U000E007F!", true},
	} {
		if got := Displayable(tc.s); got != tc.want {
			t.Errorf("Displayable(%+q) = %v, want %v", tc.s, got, tc.want)
		}
	}
}

// Ensure DatabaseName takes what MongoDB takes on Unix and names what it refuses.
func TestDatabaseName(t *testing.T) {
	t.Parallel()
	for name, ok := range map[string]bool{
		"backend": true, "space_65f0": true, "a-b": true, strings.Repeat("a", 63): true,
		"": false, strings.Repeat("a", 64): false, "a/b": false, `a\b`: false, "a.b": false,
		"a b": false, `a"b`: false, "a$b": false, "a\x00b": false,
	} {
		if got := DatabaseName(name) == ""; got != ok {
			t.Errorf("DatabaseName(%q) = %q, want ok=%v", name, DatabaseName(name), ok)
		}
	}
}
