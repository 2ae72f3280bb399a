package budget

import "math"

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
