package mock

import (
	"reflect"
	"regexp"
	"strings"
	"testing"
	"text/template"
	"time"
)

// Ensure the same seed gives the same values and another seed others.
func TestGenerator_Deterministic(t *testing.T) {
	t.Parallel()
	run := func(seed uint64) []any {
		g := NewGenerator(seed)
		start := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
		return []any{g.User(User{}), g.Product(Product{}), g.Address(Address{}), g.Phone(), g.Int(1, 6),
			g.String(12, ""), g.Date(start, start.AddDate(1, 0, 0)), g.Bool(0.5), Pick(g, []string{"a", "b", "c"}), g.UUID(),
			g.Name(), g.Email()}
	}
	a, b, c := run(42), run(42), run(43)
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("seed 42 twice differs:\n%v\n%v", a, b)
	}
	if reflect.DeepEqual(a, c) {
		t.Fatal("seeds 42 and 43 gave identical values")
	}
}

// Ensure generated values look real and respect their arguments.
func TestGenerator_Values(t *testing.T) {
	t.Parallel()
	g := NewGenerator(7)
	emailRe := regexp.MustCompile(`^[a-z-]+\.[a-z-]+\d+@[a-z.]+$`)
	for range 100 {
		if name, email := g.Name(), g.Email(); !regexp.MustCompile(`^[A-Z][a-z]+ [A-Z][A-Za-z -]+$`).MatchString(name) || !emailRe.MatchString(email) {
			t.Fatalf("Name %q or Email %q looks wrong", name, email)
		}
		u := g.User(User{})
		if !emailRe.MatchString(u.Email) || u.Name != u.FirstName+" "+u.LastName || u.Address.City == "" || u.ID == "" {
			t.Fatalf("user looks wrong: %+v", u)
		}
		if !regexp.MustCompile(`^\d+ [A-Z][a-z]+ [A-Z][a-z]+$`).MatchString(u.Address.Street) {
			t.Fatalf("street %q", u.Address.Street)
		}
		if n := g.Int(3, 5); n < 3 || n > 5 {
			t.Fatalf("Int(3,5)=%d", n)
		}
		if s := g.String(8, "xy"); len(s) != 8 || strings.Trim(s, "xy") != "" {
			t.Fatalf("String(8, xy)=%q", s)
		}
		lo, hi := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2020, 2, 1, 0, 0, 0, 0, time.UTC)
		if d := g.Date(lo, hi); d.Before(lo) || d.After(hi) {
			t.Fatalf("Date=%v outside range", d)
		}
		if p := g.Product(Product{}); p.Price < 5 || p.Price > 500 || p.InStock != (p.Stock > 0) {
			t.Fatalf("product %+v", p)
		}
		if !regexp.MustCompile(`^\+1 \(\d{3}\) \d{3}-\d{4}$`).MatchString(g.Phone()) {
			t.Fatal("phone format")
		}
	}
	if g.Bool(0) || !g.Bool(1) {
		t.Fatal("Bool(0) must be false and Bool(1) true")
	}
	u := g.User(User{Name: "Fixed", Address: Address{City: "Paris"}})
	if u.Name != "Fixed" || u.Address.City != "Paris" || u.Address.Street == "" {
		t.Fatalf("overrides not merged: %+v", u)
	}
	if got := Array(3, func(i int) int { return i * 2 }); !reflect.DeepEqual(got, []int{0, 2, 4}) {
		t.Fatalf("Array=%v", got)
	}
	if got := Pick[int](g, nil); got != 0 {
		t.Fatalf("Pick(nil)=%d", got)
	}
}

// Ensure FuncMap works in text/template.
func TestGenerator_FuncMap(t *testing.T) {
	t.Parallel()
	tpl := template.Must(template.New("t").Funcs(NewGenerator(1).FuncMap()).Parse(
		`{{(user).Email}}|{{int 1 1}}|{{string 3 "z"}}|{{pick "only"}}|{{range seq 2}}x{{end}}|{{date "2024-01-01T00:00:00Z" "2024-01-01T00:00:00Z"}}`))
	var b strings.Builder
	if err := tpl.Execute(&b, nil); err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(b.String(), "|")
	if !strings.Contains(parts[0], "@") || parts[1] != "1" || parts[2] != "zzz" || parts[3] != "only" || parts[4] != "xx" || parts[5] != "2024-01-01T00:00:00Z" {
		t.Fatalf("template output %q", b.String())
	}
}
