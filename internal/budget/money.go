package budget

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
)

// unitsPerUSD is the scale of money in this package, as in the usage rollup: 10 decimals.
const unitsPerUSD = 1e10

// units is an amount of money in 1e-10 USD. Sums of units are exact, so a spend answered as
// dollars carries no binary noise and nothing reserved is exactly 0.
type units int64

// toUnits rounds usd to the nearest unit; NaN and negative amounts are 0.
func toUnits(usd float64) units {
	if math.IsNaN(usd) || usd <= 0 {
		return 0
	}
	return units(math.Round(usd * unitsPerUSD))
}

// USD returns u in dollars, with at most 10 decimals.
func (u units) USD() float64 { return float64(u) / unitsPerUSD }

// MaxLimit is the largest budget accepted (USD per month): amounts are kept in 1e-10 USD in
// 64 bits, which hold about $922 million.
const MaxLimit = 1e8

// ValidLimit reports whether usd may be a monthly budget: a number from 0 to MaxLimit that
// is 0 or does not round to 0 units (a budget of $1e-12 would be kept as $0 and refuse every
// call).
func ValidLimit(usd float64) bool {
	return !math.IsNaN(usd) && usd >= 0 && usd <= MaxLimit && (usd == 0 || toUnits(usd) > 0)
}

// LimitRule says what ValidLimit accepts, for messages.
const LimitRule = "0, or a number of US dollars from 0.0000000001 to 100000000"

// dollarsText is an amount as people write it: digits with an optional fraction and "$".
var dollarsText = regexp.MustCompile(`^\$?([0-9]+(\.[0-9]*)?|\.[0-9]+)$`)

// ParseDollars reads a budget written as text ("25", "$25", "0.5"): plain decimal digits only
// (not 1e3, 1_000 or 0x10, which Go's number syntax would take), and ValidLimit.
func ParseDollars(text string) (float64, error) {
	s := strings.TrimSpace(text)
	v, err := strconv.ParseFloat(strings.TrimPrefix(s, "$"), 64)
	if !dollarsText.MatchString(s) || err != nil || !ValidLimit(v) {
		return 0, fmt.Errorf("%q is not an amount of US dollars: write %s (25, $25 or 0.5)", text, LimitRule)
	}
	return v, nil
}

// Dollars writes an amount with the decimals it has, up to 10 and at least 2: $25.00,
// $0.21045495, $0.0000471.
func Dollars(v float64) string {
	s := strings.TrimRight(strconv.FormatFloat(v, 'f', 10, 64), "0")
	if i := strings.IndexByte(s, '.'); len(s)-i < 3 {
		s += strings.Repeat("0", 3-(len(s)-i))
	}
	return "$" + s
}
