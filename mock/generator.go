package mock

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"text/template"
	"time"
)

// Generator produces realistic fake data: numbers, strings, dates, names, e-mails,
// phone numbers, addresses, users and products. A generator built with the same seed
// yields the same values in the same order. It is safe for concurrent use (the order of
// values between goroutines is then up to the scheduler).
type Generator struct {
	mu sync.Mutex
	r  *rand.Rand
}

// NewGenerator returns a generator seeded with seed.
func NewGenerator(seed uint64) *Generator {
	return &Generator{r: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

var (
	defaultGenOnce sync.Once
	defaultGen     *Generator
)

// DefaultGenerator returns the process-wide generator, seeded from the time of
// first use.
func DefaultGenerator() *Generator {
	defaultGenOnce.Do(func() { defaultGen = NewGenerator(uint64(time.Now().UnixNano())) })
	return defaultGen
}

// User is a generated user.
type User struct {
	ID        string    `json:"id"`
	FirstName string    `json:"firstName"`
	LastName  string    `json:"lastName"`
	Name      string    `json:"name"`
	Email     string    `json:"email"`
	Username  string    `json:"username"`
	Phone     string    `json:"phone"`
	Avatar    string    `json:"avatar"`
	Role      string    `json:"role"`
	Address   Address   `json:"address"`
	CreatedAt time.Time `json:"createdAt"`
}

// Product is a generated product.
type Product struct {
	ID          string  `json:"id"`
	Name        string  `json:"name"`
	Description string  `json:"description"`
	Price       float64 `json:"price"`
	Currency    string  `json:"currency"`
	Category    string  `json:"category"`
	SKU         string  `json:"sku"`
	InStock     bool    `json:"inStock"`
	Stock       int     `json:"stock"`
	Rating      float64 `json:"rating"`
}

// Address is a generated postal address.
type Address struct {
	Street  string `json:"street"`
	City    string `json:"city"`
	State   string `json:"state"`
	ZipCode string `json:"zipCode"`
	Country string `json:"country"`
}

var (
	firstNames = []string{"Ada", "Alan", "Grace", "Linus", "Margaret", "Dennis", "Barbara", "Ken", "Frances", "Donald",
		"Radia", "John", "Katherine", "Tim", "Hedy", "Edsger", "Sophie", "Liam", "Olivia", "Noah", "Emma", "Lucas", "Mia", "Elena"}
	lastNames = []string{"Lovelace", "Turing", "Hopper", "Torvalds", "Hamilton", "Ritchie", "Liskov", "Thompson", "Allen",
		"Knuth", "Perlman", "McCarthy", "Johnson", "Berners-Lee", "Lamarr", "Dijkstra", "Wilson", "Martin", "Garcia", "Rossi", "Schmidt", "Dubois"}
	domains     = []string{"example.com", "example.org", "mail.example.net", "acme.test"}
	streetNames = []string{"Maple", "Oak", "Cedar", "Elm", "Pine", "Washington", "Lake", "Hill", "Park", "Main", "Church", "Mill", "River", "Sunset"}
	streetKinds = []string{"Street", "Avenue", "Road", "Lane", "Boulevard", "Drive", "Way", "Court"}
	cities      = []struct{ city, state, country string }{
		{"Springfield", "IL", "United States"}, {"Portland", "OR", "United States"}, {"Austin", "TX", "United States"},
		{"Boston", "MA", "United States"}, {"Denver", "CO", "United States"}, {"Seattle", "WA", "United States"},
		{"Toronto", "ON", "Canada"}, {"Vancouver", "BC", "Canada"}, {"Manchester", "England", "United Kingdom"},
		{"Lyon", "Auvergne-Rhône-Alpes", "France"}, {"Munich", "Bavaria", "Germany"}, {"Melbourne", "VIC", "Australia"},
	}
	adjectives = []string{"Ergonomic", "Sleek", "Rustic", "Practical", "Handcrafted", "Smart", "Refined", "Compact", "Durable", "Lightweight"}
	materials  = []string{"Wooden", "Steel", "Cotton", "Leather", "Bamboo", "Ceramic", "Granite", "Wool", "Aluminium"}
	items      = []string{"Chair", "Lamp", "Backpack", "Keyboard", "Mug", "Desk", "Headphones", "Watch", "Bottle", "Notebook", "Jacket", "Speaker"}
	categories = []string{"Home", "Office", "Outdoors", "Electronics", "Kitchen", "Clothing", "Sports", "Books"}
	roles      = []string{"user", "user", "user", "editor", "admin"}
)

// Alphanumeric is the default charset of [Generator.String].
const Alphanumeric = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

func (g *Generator) intn(n int) int {
	if n <= 0 {
		return 0
	}
	return g.r.IntN(n)
}

func pick[T any](g *Generator, s []T) T { return s[g.intn(len(s))] }

// Int returns a uniform integer in [min, max].
// The bounds are swapped if min > max.
func (g *Generator) Int(min, max int) int {
	if min > max {
		min, max = max, min
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return min + int(g.r.Int64N(int64(max-min)+1))
}

// String returns n characters drawn from charset, or from [Alphanumeric]
// when charset is empty.
func (g *Generator) String(n int, charset string) string {
	if charset == "" {
		charset = Alphanumeric
	}
	rs := []rune(charset)
	g.mu.Lock()
	defer g.mu.Unlock()
	var b strings.Builder
	for range max(n, 0) {
		b.WriteRune(rs[g.intn(len(rs))])
	}
	return b.String()
}

// Bool returns true with probability p, clamped to [0, 1]; 0.5 gives a fair coin.
func (g *Generator) Bool(p float64) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.r.Float64() < p
}

// Date returns a time uniformly drawn from [start, end]. Zero start means one year
// before end; zero end means now.
func (g *Generator) Date(start, end time.Time) time.Time {
	if end.IsZero() {
		end = time.Now()
	}
	if start.IsZero() {
		start = end.AddDate(-1, 0, 0)
	}
	if end.Before(start) {
		start, end = end, start
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	span := end.Sub(start)
	if span <= 0 {
		return start
	}
	return start.Add(time.Duration(g.r.Int64N(int64(span) + 1))).Truncate(time.Second)
}

// Phone returns a phone number such as "+1 (555) 123-4567".
func (g *Generator) Phone() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.phone()
}

func (g *Generator) phone() string {
	return fmt.Sprintf("+1 (%03d) %03d-%04d", 200+g.intn(800), 200+g.intn(800), g.intn(10000))
}

func (g *Generator) uuid() string {
	var b [16]byte
	for i := range b {
		b[i] = byte(g.r.UintN(256))
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

// UUID returns a random (version 4 layout) UUID.
func (g *Generator) UUID() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.uuid()
}

// Name returns a full name such as "Grace Hopper".
func (g *Generator) Name() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return pick(g, firstNames) + " " + pick(g, lastNames)
}

// Email returns an e-mail address such as "grace.hopper42@example.com".
func (g *Generator) Email() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return email(pick(g, firstNames), pick(g, lastNames), g.intn(100), pick(g, domains))
}

func email(first, last string, n int, domain string) string {
	clean := func(s string) string { return strings.ToLower(strings.ReplaceAll(s, " ", "")) }
	return fmt.Sprintf("%s.%s%d@%s", clean(first), clean(last), n, domain)
}

// Address returns an address; the non-zero fields of override replace
// the generated ones.
func (g *Generator) Address(override Address) Address {
	g.mu.Lock()
	a := g.address()
	g.mu.Unlock()
	merge(&a, override)
	return a
}

func (g *Generator) address() Address {
	c := pick(g, cities)
	return Address{
		Street:  fmt.Sprintf("%d %s %s", 1+g.intn(9899), pick(g, streetNames), pick(g, streetKinds)),
		City:    c.city,
		State:   c.state,
		ZipCode: fmt.Sprintf("%05d", 10000+g.intn(89999)),
		Country: c.country,
	}
}

// User returns a user; the non-zero fields of override replace the
// generated ones.
func (g *Generator) User(override User) User {
	g.mu.Lock()
	first, last := pick(g, firstNames), pick(g, lastNames)
	n := g.intn(100)
	u := User{
		ID:        g.uuid(),
		FirstName: first,
		LastName:  last,
		Name:      first + " " + last,
		Email:     email(first, last, n, pick(g, domains)),
		Username:  strings.ToLower(first[:1] + strings.ReplaceAll(last, "-", "")),
		Phone:     g.phone(),
		Role:      pick(g, roles),
		Address:   g.address(),
		CreatedAt: time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(g.r.Int64N(int64(5 * 365 * 24 * time.Hour)))).Truncate(time.Second),
	}
	u.Avatar = "https://i.pravatar.cc/150?u=" + u.ID
	g.mu.Unlock()
	merge(&u.Address, override.Address)
	override.Address = Address{}
	merge(&u, override)
	return u
}

// Product returns a product; the non-zero fields of override replace the
// generated ones. InStock follows
// Stock unless override sets Stock.
func (g *Generator) Product(override Product) Product {
	g.mu.Lock()
	name := pick(g, adjectives) + " " + pick(g, materials) + " " + pick(g, items)
	p := Product{
		ID:       g.uuid(),
		Name:     name,
		Category: pick(g, categories),
		Price:    float64(500+g.intn(49500)) / 100,
		Currency: "USD",
		SKU:      fmt.Sprintf("SKU-%05d", g.intn(100000)),
		Stock:    g.intn(200),
		Rating:   float64(10+g.intn(41)) / 10,
	}
	p.Description = fmt.Sprintf("A %s %s for everyday use, built to last.", strings.ToLower(name), strings.ToLower(p.Category))
	g.mu.Unlock()
	p.InStock = p.Stock > 0
	merge(&p, override)
	return p
}

// Array returns count values made by gen, which receives the index (none when
// count is not positive).
func Array[T any](count int, gen func(i int) T) []T {
	out := make([]T, max(count, 0))
	for i := range out {
		out[i] = gen(i)
	}
	return out
}

// Pick returns a random element of items, or the zero value when items
// is empty. g nil means [DefaultGenerator].
func Pick[T any](g *Generator, items []T) T {
	var zero T
	if len(items) == 0 {
		return zero
	}
	if g == nil {
		g = DefaultGenerator()
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return items[g.intn(len(items))]
}

// FuncMap returns the generator's functions for text/template and html/template: user,
// product, address, phone, name, email, uuid, int (min max), string (n [charset]), bool
// (p), date (start end, RFC 3339 strings; "" for the defaults), pick (values...) and
// seq (n: 0..n-1, to range over).
//
// The functions that take a count (seq, string) refuse one above [MaxTemplateCount] or
// below zero with an error, which stops the template.
func (g *Generator) FuncMap() template.FuncMap {
	return template.FuncMap{
		"user":    func() User { return g.User(User{}) },
		"product": func() Product { return g.Product(Product{}) },
		"address": func() Address { return g.Address(Address{}) },
		"phone":   g.Phone,
		"name":    g.Name,
		"email":   g.Email,
		"uuid":    g.UUID,
		"int":     g.Int,
		"string": func(n int, charset ...string) (string, error) {
			if err := checkCount("string", n); err != nil {
				return "", err
			}
			return g.String(n, strings.Join(charset, "")), nil
		},
		"bool": g.Bool,
		"date": func(start, end string) (string, error) {
			var s, e time.Time
			var err error
			if start != "" {
				if s, err = time.Parse(time.RFC3339, start); err != nil {
					return "", err
				}
			}
			if end != "" {
				if e, err = time.Parse(time.RFC3339, end); err != nil {
					return "", err
				}
			}
			return g.Date(s, e).UTC().Format(time.RFC3339), nil
		},
		"pick": func(items ...any) any { return Pick(g, items) },
		"seq": func(n int) ([]int, error) {
			if err := checkCount("seq", n); err != nil {
				return nil, err
			}
			return Array(n, func(i int) int { return i }), nil
		},
	}
}

// MaxTemplateCount is the largest count a template function (seq, string) accepts: a
// template cannot make the process allocate without bound.
const MaxTemplateCount = 10000

// CountFuncs are the template functions whose first argument is a count bounded by
// [MaxTemplateCount]; a checker of templates may look for literal counts in their calls.
var CountFuncs = []string{"seq", "string"}

func checkCount(fn string, n int) error {
	if n < 0 || n > MaxTemplateCount {
		return fmt.Errorf("%s %d: the count must be 0-%d", fn, n, MaxTemplateCount)
	}
	return nil
}
