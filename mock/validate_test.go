package mock

import (
	"slices"
	"testing"
)

func codes(vs []ValidationError) []string {
	out := []string{}
	for _, v := range vs {
		out = append(out, v.Code)
	}
	return out
}

// Ensure every validation code is reported where it should be.
func TestValidateDefinitions(t *testing.T) {
	t.Parallel()
	ok := JSON(200, nil)
	tests := []struct {
		name         string
		defs         Definitions
		wantErrors   []string
		wantWarnings []string
	}{
		{"Valid", Definitions{"GET /users/:id": ok, "* /health": ok, "GET /files/*": ok}, nil, nil},
		{"BadMethod", Definitions{"FETCH /x": ok}, []string{VInvalidMethod}, nil},
		{"LowerMethod", Definitions{"get /x": ok}, []string{VInvalidMethod}, nil},
		{"NoMethod", Definitions{"/x": ok}, []string{VInvalidRouteKey}, nil},
		{"EmptyPath", Definitions{"GET": ok}, []string{VEmptyPath}, nil},
		{"EmptyKey", Definitions{"": ok}, []string{VEmptyPath}, nil},
		{"NoLeadingSlash", Definitions{"GET users": ok}, []string{VMalformedPath}, nil},
		{"Query", Definitions{"GET /users?x=1": ok}, []string{VMalformedPath}, nil},
		{"EmptyParam", Definitions{"GET /users/:": ok}, []string{VMalformedPath}, nil},
		{"PartialWildcard", Definitions{"GET /files/*.json": ok}, []string{VMalformedPath}, nil},
		{"DuplicateParam", Definitions{"GET /a/:id/b/:id": ok}, []string{VDuplicateParam}, nil},
		{"NilHandler", Definitions{"GET /x": nil}, []string{VNilHandler}, nil},
		{"Shadowed", Definitions{"GET /users": ok, "GET /Users/": ok}, nil, []string{VShadowedRoute}},
		{"Conflicting", Definitions{"GET /users/:id": ok, "GET /users/:name": ok}, nil, []string{VConflictingRoute}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := ValidateDefinitions(tt.defs)
			if got, want := codes(r.Errors), append([]string{}, tt.wantErrors...); !slices.Equal(got, want) {
				t.Fatalf("errors=%v, want %v (%+v)", got, want, r.Errors)
			}
			if got, want := codes(r.Warnings), append([]string{}, tt.wantWarnings...); !slices.Equal(got, want) {
				t.Fatalf("warnings=%v, want %v", got, want)
			}
			if r.Valid != (len(tt.wantErrors) == 0) {
				t.Fatalf("Valid=%v", r.Valid)
			}
		})
	}
}

// Ensure the single-route validators report their codes.
func TestValidateHandlerAndPattern(t *testing.T) {
	t.Parallel()
	if r := ValidateHandler("GET /x", nil); r.Valid || codes(r.Errors)[0] != VNilHandler {
		t.Fatalf("nil handler: %+v", r)
	}
	if r := ValidateHandler("GET /x", JSON(200, nil)); !r.Valid {
		t.Fatalf("valid handler: %+v", r)
	}
	if r := ValidateRoutePattern("/users/:id"); !r.Valid {
		t.Fatalf("path pattern: %+v", r)
	}
	if r := ValidateRoutePattern("PATCH /users/:id/:id"); r.Valid || codes(r.Errors)[0] != VDuplicateParam {
		t.Fatalf("duplicate: %+v", r)
	}
}
