package budget

import "testing"

// Ensure a budget written as text is a plain decimal amount that the ledger can hold: Go's
// other number syntax (1e3, 1_000, hex) is refused, and so are amounts past MaxLimit or so
// small they would be kept as $0.
func TestParseDollars(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want float64
		ok   bool
	}{
		{"25", 25, true}, {"$25", 25, true}, {" 0.5 ", 0.5, true}, {".5", 0.5, true}, {"25.", 25, true},
		{"0", 0, true}, {"100000000", MaxLimit, true}, {"0.0000000001", 1e-10, true},
		{"100000000.01", 0, false}, {"950000000", 0, false}, {"0.00000000001", 0, false},
		{"1e3", 0, false}, {"1_000", 0, false}, {"0x10", 0, false}, {"0x1p-2", 0, false},
		{"$", 0, false}, {"", 0, false}, {"-1", 0, false}, {"+1", 0, false}, {"NaN", 0, false},
		{"Inf", 0, false}, {"$$1", 0, false}, {"1,5", 0, false}, {"lots", 0, false},
	} {
		got, err := ParseDollars(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("ParseDollars(%q) = %v, %v; want %v, ok %v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

// Ensure amounts are written with the decimals they have (up to the ledger's 10), so that
// limit, spent and remaining can be checked against each other by eye.
func TestDollars(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   float64
		want string
	}{
		{25, "$25.00"}, {0, "$0.00"}, {0.5, "$0.50"}, {0.21045495, "$0.21045495"}, {0.0000471, "$0.0000471"},
		{0.1 + 0.2, "$0.30"}, {1e-10, "$0.0000000001"}, {1e-12, "$0.00"}, {100000000, "$100000000.00"},
		{12.3456789012345, "$12.3456789012"},
	} {
		if got := Dollars(tc.in); got != tc.want {
			t.Errorf("Dollars(%v) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
