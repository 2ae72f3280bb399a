package keys

import (
	"encoding/json"
	"math"
	"strings"
	"unicode/utf8"

	"github.com/acme/app/internal/validate"
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
	if raw := fields["name"]; validate.IsNull(raw) {
		msgs = append(msgs, validate.NotEmpty("name"), validate.IsString("name"))
		in.Name = validate.Reported
	} else if name, ok := validate.String(raw); !ok {
		msgs = append(msgs, validate.IsString("name"))
		in.Name = validate.Reported
	} else {
		in.Name = name
	}
	if raw := fields["expiresInDays"]; !validate.IsNull(raw) {
		if f, ok := validate.Integer(raw); !ok || math.Abs(f) > 1<<31 {
			msgs = append(msgs, validate.IsInt("expiresInDays"))
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
		msgs = append(msgs, validate.NotEmpty("name"))
	case utf8.RuneCountInString(in.Name) > MaxNameLength:
		msgs = append(msgs, validate.MaxLength("name", MaxNameLength))
	case !validate.Displayable(in.Name):
		msgs = append(msgs, "name must not contain control characters")
	}
	if d := in.ExpiresInDays; d != nil {
		if *d < 1 {
			msgs = append(msgs, validate.Min("expiresInDays", 1))
		}
		if *d > MaxExpiryDays {
			msgs = append(msgs, validate.Max("expiresInDays", MaxExpiryDays))
		}
	}
	return msgs
}
