// Package validate reads the properties of a JSON request body and words what is wrong with
// them as class-validator does ("name should not be empty", "limit must not be greater than
// 500"): clients match on these messages, so every service builds them here, from one
// wording.
//
// A rule's message names the property it failed on (prop): a top-level name such as "email"
// or a path such as "messages.0.content".
package validate

import (
	"bytes"
	"encoding/json"
	"math"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Reported is what a decoder stores in a string property whose type problem it has already
// reported: not empty and in no list of allowed values, so that a later rule neither passes
// it nor reports it again.
const Reported = "\x00"

// IsNull reports whether raw, a property's JSON as decoded into a map[string]json.RawMessage,
// is missing (nil) or null. class-validator treats the two alike: optional rules skip them and
// required ones refuse them.
func IsNull(raw json.RawMessage) bool {
	return raw == nil || bytes.Equal(bytes.TrimSpace(raw), []byte("null"))
}

// String returns the string raw holds, and false when raw is missing, null or another JSON
// type (then the string is "").
func String(raw json.RawMessage) (string, bool) {
	var s string
	if IsNull(raw) || json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

// Integer returns the number raw holds when it is a whole JSON number (2.0 is one), and false
// for anything else (missing, null, a fraction, another type). Callers bound it themselves.
func Integer(raw json.RawMessage) (float64, bool) {
	var f float64
	if IsNull(raw) || json.Unmarshal(raw, &f) != nil || f != math.Trunc(f) {
		return 0, false
	}
	return f, true
}

// RequiredString applies @IsString() @IsNotEmpty() to the property prop whose JSON is raw. It
// returns the string ("" when raw is not one) and the failures in the order class-validator
// reports them: missing, null and "" should not be empty; anything but a string must be one.
func RequiredString(prop string, raw json.RawMessage) (string, []string) {
	s, ok := String(raw)
	var msgs []string
	if s == "" && (ok || IsNull(raw)) {
		msgs = append(msgs, NotEmpty(prop))
	}
	if !ok {
		msgs = append(msgs, IsString(prop))
	}
	return s, msgs
}

// NotEmpty is @IsNotEmpty()'s failure.
func NotEmpty(prop string) string { return prop + " should not be empty" }

// IsString is @IsString()'s failure.
func IsString(prop string) string { return prop + " must be a string" }

// NotAllowed is the failure of a property the input does not have (class-validator's
// forbidNonWhitelisted), such as an unknown query parameter.
func NotAllowed(prop string) string { return "property " + prop + " should not exist" }

// IsArray is @IsArray()'s failure.
func IsArray(prop string) string { return prop + " must be an array" }

// IsObject is @IsObject()'s failure.
func IsObject(prop string) string { return prop + " must be an object" }

// EachObject is @IsObject({each: true})'s failure on an array.
func EachObject(prop string) string { return "each value in " + prop + " must be an object" }

// EachNested is @ValidateNested({each: true})'s failure on an array holding something that is
// neither an object nor an array.
func EachNested(prop string) string {
	return "each value in nested property " + prop + " must be either object or array"
}

// IsInt is @IsInt()'s failure.
func IsInt(prop string) string { return prop + " must be an integer number" }

// IsNumber is @IsNumber()'s failure (NaN and infinities are refused too).
func IsNumber(prop string) string {
	return prop + " must be a number conforming to the specified constraints"
}

// IsBoolean is @IsBoolean()'s failure.
func IsBoolean(prop string) string { return prop + " must be a boolean value" }

// IsEmail is @IsEmail()'s failure.
func IsEmail(prop string) string { return prop + " must be an email" }

// Min is @Min(n)'s failure.
func Min[N int | float64](prop string, n N) string {
	return prop + " must not be less than " + number(n)
}

// Max is @Max(n)'s failure.
func Max[N int | float64](prop string, n N) string {
	return prop + " must not be greater than " + number(n)
}

// MinLength is @MinLength(n)'s failure (and @Length(n, …)'s below n).
func MinLength(prop string, n int) string {
	return prop + " must be longer than or equal to " + strconv.Itoa(n) + " characters"
}

// MaxLength is @MaxLength(n)'s failure (and @Length(…, n)'s above n).
func MaxLength(prop string, n int) string {
	return prop + " must be shorter than or equal to " + strconv.Itoa(n) + " characters"
}

// IsIn is @IsIn(values)'s failure.
func IsIn(prop string, values []string) string {
	return prop + " must be one of the following values: " + strings.Join(values, ", ")
}

// Matches is @Matches(pattern)'s failure.
func Matches(prop string, pattern *regexp.Regexp) string {
	return prop + " must match " + pattern.String() + " regular expression"
}

// number prints n in decimal, without an exponent, and without a fraction when it is whole.
func number[N int | float64](n N) string {
	if f, ok := any(n).(float64); ok {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	return strconv.Itoa(int(n))
}

// Displayable reports whether s can be shown as it is, in a terminal or a page, without
// changing what is around it or hiding what it is: valid UTF-8 without a Hidden rune. Tag
// characters (U+E0020–U+E007F) are invisible too, and only allowed in the emoji tag sequences
// they exist for (a subdivision flag: U+1F3F4, tags, U+E007F). Names people give (users, API
// keys) must be displayable.
func Displayable(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	flag, tagged := false, false // after U+1F3F4; tags since it
	for _, r := range s {
		if isTag(r) {
			if !flag {
				return false
			}
			if r == 0xE007F { // the sequence's end
				flag, tagged = false, false
			} else {
				tagged = true
			}
			continue
		}
		if tagged {
			return false // a tag sequence without its end
		}
		flag = r == 0x1F3F4
		if Hidden(r) {
			return false
		}
	}
	return !tagged
}

// isTag reports whether r is a tag character.
func isTag(r rune) bool { return r >= 0xE0020 && r <= 0xE007F }

// Hidden reports whether r is a control character (C0 and C1, whose escape sequences a
// terminal runs), a bidirectional control (U+202E shows "exe.txt" for "txt.exe"), a line or
// paragraph separator, or an invisible character that makes a name look like another: a
// format character (zero-width space, soft hyphen, word joiner, tags, the interlinear
// annotation marks, …), a default-ignorable one (Hangul fillers, the Khmer inherent vowels),
// a variation selector other than the text and emoji ones (U+FE0E, U+FE0F), and the blank
// Braille pattern. The zero-width joiners (U+200C, U+200D), which scripts and emoji need, are
// not hidden.
func Hidden(r rune) bool {
	switch {
	case r == 0x200C || r == 0x200D || r == 0xFE0E || r == 0xFE0F:
		return false
	case unicode.IsControl(r), unicode.In(r, unicode.Cf, unicode.Zl, unicode.Zp, unicode.Bidi_Control,
		unicode.Other_Default_Ignorable_Code_Point, unicode.Variation_Selector):
		return true
	}
	return r == 0x2800
}

// DatabaseName checks a MongoDB database name as MongoDB does on Unix. It returns what is
// wrong with it, to follow the name of the property or key that holds it ("should not be
// empty"), or "" when MongoDB takes it.
func DatabaseName(name string) string {
	switch {
	case name == "":
		return "should not be empty"
	case len(name) >= 64:
		return "must be shorter than 64 characters"
	case strings.ContainsAny(name, "/\\. \"$\x00"):
		return `must not contain any of / \ . " $ space or NUL`
	}
	return ""
}
