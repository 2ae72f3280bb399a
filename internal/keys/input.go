package keys

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"unicode/utf8"
)

// Bounds of a creation.
const (
	MaxNameLength = 100
	MaxExpiryDays = 3650
)

// CreateInput is the body of POST /api/keys: {name, expiresInDays?}.
type CreateInput struct {
	Name          string
	ExpiresInDays *int // nil: the key does not expire
}

// ParseCreate reads the raw fields of a creation body, reporting each type problem in
// class-validator's wording; Validate is applied too.
func ParseCreate(fields map[string]json.RawMessage) (CreateInput, []string) {
	var in CreateInput
	var msgs []string
	isNull := func(raw json.RawMessage) bool { return raw == nil || strings.TrimSpace(string(raw)) == "null" }
	if raw := fields["name"]; isNull(raw) || json.Unmarshal(raw, &in.Name) != nil {
		if !isNull(raw) {
			msgs = append(msgs, "name must be a string")
		} else {
			msgs = append(msgs, "name should not be empty", "name must be a string")
		}
		in.Name = "\x00" // reported already
	}
	if raw := fields["expiresInDays"]; !isNull(raw) {
		var f float64
		if err := json.Unmarshal(raw, &f); err != nil || f != math.Trunc(f) || math.Abs(f) > 1<<31 {
			msgs = append(msgs, "expiresInDays must be an integer number")
		} else {
			n := int(f)
			in.ExpiresInDays = &n
		}
	}
	if len(msgs) == 0 {
		msgs = in.Validate()
	}
	return in, msgs
}

// Validate returns the class-validator messages for in.
func (in CreateInput) Validate() []string {
	var msgs []string
	name := strings.TrimSpace(in.Name)
	switch {
	case name == "":
		msgs = append(msgs, "name should not be empty")
	case utf8.RuneCountInString(in.Name) > MaxNameLength:
		msgs = append(msgs, fmt.Sprintf("name must be shorter than or equal to %d characters", MaxNameLength))
	case !utf8.ValidString(in.Name) || strings.ContainsFunc(in.Name, func(r rune) bool { return r < 0x20 || r == 0x7f }):
		msgs = append(msgs, "name must not contain control characters")
	}
	if d := in.ExpiresInDays; d != nil {
		if *d < 1 {
			msgs = append(msgs, "expiresInDays must not be less than 1")
		}
		if *d > MaxExpiryDays {
			msgs = append(msgs, fmt.Sprintf("expiresInDays must not be greater than %d", MaxExpiryDays))
		}
	}
	return msgs
}
