// Package suggest measures how far a mistyped name is from the names it may have meant, for
// the "did you mean" hints of the configuration, the command line and the mock file reader.
// It imports nothing of the module, so that the public mock packages may use it too.
package suggest

// maxLen bounds the bytes of each name compared, and so the cost of a comparison.
const maxLen = 128

// Distance is the Levenshtein distance of a and b, counted in bytes over at most their first
// 128 bytes (enough to rank route keys and suggest field, key and command names).
func Distance(a, b string) int {
	if len(a) > maxLen {
		a = a[:maxLen]
	}
	if len(b) > maxLen {
		b = b[:maxLen]
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			c := 1
			if a[i-1] == b[j-1] {
				c = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+c)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
