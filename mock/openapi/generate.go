package openapi

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"time"
)

// maxDepth bounds how deep a generated answer nests, so a recursive schema (a tree whose
// nodes hold nodes) gives a finite answer.
const maxDepth = 12

// generator builds answers from schemas: static (the same answer every time, as Prism's
// static mode) or, with rnd set, random data valid against the schema.
type generator struct {
	s    *Spec
	rnd  *rand.Rand // nil: static
	made int        // values built so far, bounded by maxValues
	// size is what the answer built so far takes once encoded as JSON (counted as it grows,
	// a little over rather than under); limit bounds it (0: MaxAnswer). Past the limit, over
	// is set and the building stops: what was built is not the answer.
	size, limit int
	over        bool
}

// MaxAnswer bounds the body of one answer built from a description (its example, or data
// built from its schema): 10 MB, as for a templated answer of a mock file. The size is
// counted while the answer is built, so a schema asking for more (a thousand items of a
// thousand strings of a million characters) costs no more than this to refuse.
const MaxAnswer = 10 << 20

// charge counts n more bytes of the answer and reports whether it is still within its limit.
func (g *generator) charge(n int) bool {
	limit := g.limit
	if limit <= 0 {
		limit = MaxAnswer
	}
	g.size += n
	if g.size > limit {
		g.over = true
	}
	return !g.over
}

// left is how many bytes the answer may still take.
func (g *generator) left() int {
	limit := g.limit
	if limit <= 0 {
		limit = MaxAnswer
	}
	return max(limit-g.size, 0)
}

// literal charges a value written in the description (an example, a default, an enum value)
// and returns it, or nil when it passes the limit.
func (g *generator) literal(v any) any {
	if !g.charge(sizeOf(v, g.left()+1)) {
		return nil
	}
	return v
}

// sizeOf is about what v takes encoded as JSON (a string's escapes aside), counted no
// further than limit: a value aliased a million times in YAML costs only limit to measure.
func sizeOf(v any, limit int) int {
	n := 0
	var walk func(v any)
	walk = func(v any) {
		if n > limit {
			return
		}
		switch x := v.(type) {
		case string:
			n += len(x) + 2
		case *obj:
			n += 2
			for _, k := range x.keys {
				n += len(k) + 4
				walk(x.vals[k])
				if n > limit {
					return
				}
			}
		case []any:
			n += 2
			for _, e := range x {
				n++
				walk(e)
				if n > limit {
					return
				}
			}
		case map[string]any:
			n += 2
			for k, e := range x {
				n += len(k) + 4
				walk(e)
				if n > limit {
					return
				}
			}
		default:
			n += 24 // a number, a boolean, null
		}
	}
	walk(v)
	return n
}

// maxValues bounds the values of one generated answer, so a schema whose every property
// refers to a wide object (wide × deep) cannot make an answer of billions of values.
const maxValues = 20000

// formatSamples are the static values of string formats (those of Prism's static mode).
var formatSamples = map[string]string{
	"date":                  "2019-08-24",
	"date-time":             "2019-08-24T14:15:22Z",
	"time":                  "14:15:22Z",
	"email":                 "user@example.com",
	"idn-email":             "пользователь@пример.ру",
	"uri":                   "http://example.com",
	"uri-reference":         "../dictionary",
	"uri-template":          "http://example.com/{endpoint}",
	"iri":                   "http://пример.ру",
	"iri-reference":         "../словарь",
	"hostname":              "example.com",
	"idn-hostname":          "пример.ру",
	"ipv4":                  "192.168.0.1",
	"ipv6":                  "2001:0db8:85a3:0000:0000:8a2e:0370:7334",
	"uuid":                  "095be615-a8ad-4c33-8e9c-c7612fbf6c9f",
	"json-pointer":          "/json/pointer",
	"relative-json-pointer": "1/relative/json/pointer",
	"regex":                 "/regex/",
	"password":              "pa$$word",
}

// static is the static answer for the schema at l: its example (3.0 example, else the first
// of 3.1 examples), else its default, const or first enum value, else one built from its
// parts: each property (writeOnly ones left out), one array item, "string" or a format's
// sample, 0 (or the minimum), true.
func (g *generator) static(l loc, depth int) any { return g.value(l, depth) }

func (g *generator) value(l loc, depth int) any {
	g.made++
	if depth > maxDepth || g.made > maxValues || g.over {
		return nil
	}
	l = g.s.res(l)
	o := l.obj()
	if o == nil {
		return nil
	}
	if g.rnd == nil {
		if v, ok := o.get("example"); ok {
			return g.literal(v)
		}
		if ex, ok := o.vals["examples"].([]any); ok && len(ex) > 0 {
			return g.literal(ex[0])
		}
		if v, ok := o.get("default"); ok {
			return g.literal(v)
		}
	}
	if v, ok := o.get("const"); ok {
		return g.literal(v)
	}
	if enum, ok := o.vals["enum"].([]any); ok && len(enum) > 0 {
		if g.rnd == nil {
			return g.literal(enum[0])
		}
		return g.literal(enum[g.rnd.IntN(len(enum))])
	}
	if parts, ok := o.vals["allOf"].([]any); ok && len(parts) > 0 {
		return g.allOf(l, len(parts), depth)
	}
	for _, k := range []string{"oneOf", "anyOf"} {
		if parts, ok := o.vals[k].([]any); ok && len(parts) > 0 {
			return g.value(l.child(k).index(0), depth+1)
		}
	}
	switch g.kind(o) {
	case "object":
		return g.object(l, depth)
	case "array":
		return g.array(l, depth)
	case "string":
		return g.str(o)
	case "integer":
		g.charge(24)
		return g.integer(o)
	case "number":
		g.charge(24)
		return g.number(o)
	case "boolean":
		g.charge(5)
		if g.rnd == nil {
			return true
		}
		return g.rnd.IntN(2) == 0
	}
	g.charge(4)
	return nil
}

// kind is the type to generate: the first non-null one named, else one inferred.
func (g *generator) kind(o *obj) string {
	switch t := o.vals["type"].(type) {
	case string:
		return t
	case []any:
		for _, e := range t {
			if s, ok := e.(string); ok && s != "null" {
				return s
			}
		}
		return "null"
	}
	switch {
	case o.vals["properties"] != nil || o.vals["additionalProperties"] != nil:
		return "object"
	case o.vals["items"] != nil:
		return "array"
	}
	return ""
}

// allOf merges the parts' answers: objects key by key, anything else the last part's.
func (g *generator) allOf(l loc, n, depth int) any {
	var merged *obj
	var last any
	for i := range n {
		v := g.value(l.child("allOf").index(i), depth+1)
		if po, ok := v.(*obj); ok {
			if merged == nil {
				merged = &obj{vals: map[string]any{}}
			}
			for _, k := range po.keys {
				if _, has := merged.vals[k]; !has {
					merged.keys = append(merged.keys, k)
				}
				merged.vals[k] = po.vals[k]
			}
			continue
		}
		if v != nil {
			last = v
		}
	}
	// properties beside allOf belong to the answer too
	if own := g.object(l, depth); own != nil {
		if oo, ok := own.(*obj); ok && len(oo.keys) > 0 {
			if merged == nil {
				merged = &obj{vals: map[string]any{}}
			}
			for _, k := range oo.keys {
				if _, has := merged.vals[k]; !has {
					merged.keys = append(merged.keys, k)
				}
				merged.vals[k] = oo.vals[k]
			}
		}
	}
	if merged != nil {
		return merged
	}
	return last
}

func (g *generator) object(l loc, depth int) any {
	out := &obj{vals: map[string]any{}}
	g.charge(2)
	props := l.child("properties")
	for _, name := range props.obj().keysOrNil() {
		pl := g.s.res(props.child(name))
		if pl.obj().boolean("writeOnly") {
			continue
		}
		if !g.charge(len(name) + 4) {
			break
		}
		v := g.value(pl, depth+1)
		if v == nil && (depth+1 > maxDepth || g.made > maxValues || g.over) {
			continue
		}
		out.keys = append(out.keys, name)
		out.vals[name] = v
	}
	// a schema for additional properties gets two of them, as Prism's static mode answers
	if extra := l.child("additionalProperties"); extra.obj() != nil && depth+1 <= maxDepth {
		for _, name := range []string{"property1", "property2"} {
			if _, taken := out.vals[name]; !taken && g.charge(len(name)+4) {
				out.keys = append(out.keys, name)
				out.vals[name] = g.value(extra, depth+1)
			}
		}
	}
	return out
}

func (g *generator) array(l loc, depth int) any {
	o := l.obj()
	n := 1
	if m, ok := num(o.vals["minItems"]); ok && int(m) > n {
		n = min(int(m), 100)
	}
	if g.rnd != nil {
		hi := n + 2
		if m, ok := num(o.vals["maxItems"]); ok && int(m) < hi {
			hi = max(int(m), n)
		}
		n += g.rnd.IntN(hi - n + 1)
	}
	if m, ok := num(o.vals["maxItems"]); ok && int(m) < n {
		n = max(int(m), 0)
	}
	g.charge(2)
	out := make([]any, 0, min(n, 1024))
	for range n {
		if depth+1 > maxDepth || g.made > maxValues || !g.charge(1) {
			break
		}
		out = append(out, g.value(l.child("items"), depth+1))
	}
	return out
}

func num(v any) (float64, bool) {
	switch x := v.(type) {
	case int64:
		return float64(x), true
	case int:
		return float64(x), true
	case float64:
		return x, true
	}
	return 0, false
}

// bounds are a number schema's limits, exclusive ones (3.0 booleans or 3.1 numbers) folded in.
func bounds(o *obj, step float64) (lo, hi float64, hasLo, hasHi bool) {
	lo, hasLo = num(o.vals["minimum"])
	hi, hasHi = num(o.vals["maximum"])
	if b, ok := o.vals["exclusiveMinimum"].(bool); ok && b && hasLo {
		lo += step
	} else if v, ok := num(o.vals["exclusiveMinimum"]); ok {
		lo, hasLo = v+step, true
	}
	if b, ok := o.vals["exclusiveMaximum"].(bool); ok && b && hasHi {
		hi -= step
	} else if v, ok := num(o.vals["exclusiveMaximum"]); ok {
		hi, hasHi = v-step, true
	}
	return
}

// formatMinimums are the static values of number formats without bounds: the format's
// smallest value, as Prism's static mode answers.
var formatMinimums = map[string]any{
	"int32":  int64(math.MinInt32),
	"int64":  int64(-9007199254740991), // JavaScript's smallest safe integer
	"float":  -3.402823669209385e+38,
	"double": -math.MaxFloat64,
}

func (g *generator) integer(o *obj) any {
	lo, hi, hasLo, hasHi := bounds(o, 1)
	lo, hi = math.Ceil(lo), math.Floor(hi)
	if g.rnd == nil {
		v := int64(0)
		switch f, isMin := formatMinimums[o.str("format")]; {
		case hasLo:
			v = int64(lo)
		case hasHi:
			v = int64(hi)
		case isMin:
			if i, ok := f.(int64); ok {
				v = i
			}
		}
		if m, ok := num(o.vals["multipleOf"]); ok && m >= 1 && v%int64(m) != 0 {
			step := int64(m)
			v = (v/step + 1) * step
			if v-step >= int64(lo) && hasHi && v > int64(hi) {
				v -= step
			}
		}
		return v
	}
	lo, hi = openRange(lo, hi, hasLo, hasHi)
	if hi < lo {
		return int64(lo)
	}
	v := int64(lo) + g.rnd.Int64N(int64(hi-lo)+1)
	if m, ok := num(o.vals["multipleOf"]); ok && m >= 1 {
		step := int64(m)
		v = v / step * step
		if float64(v) < lo {
			v += step
		}
	}
	return v
}

func (g *generator) number(o *obj) any {
	if g.rnd == nil {
		// Prism's static mode: the minimum (an exclusive one plus 1), else the maximum (minus
		// 1), else the format's smallest value, else 0; kept inside both bounds when the step
		// of 1 would cross the other one
		lo, hi, hasLo, hasHi := bounds(o, 1)
		rlo, rhi, _, _ := bounds(o, 0)
		switch {
		case hasLo && hasHi && lo > hi:
			return (rlo + rhi) / 2
		case hasLo:
			return lo
		case hasHi:
			return hi
		}
		if f, ok := formatMinimums[o.str("format")]; ok {
			if _, isInt := f.(int64); !isInt {
				return f
			}
		}
		return int64(0)
	}
	lo, hi, hasLo, hasHi := bounds(o, 0.01)
	lo, hi = openRange(lo, hi, hasLo, hasHi)
	if hi < lo {
		return lo
	}
	v := math.Round((lo+g.rnd.Float64()*(hi-lo))*100) / 100
	return math.Min(math.Max(v, lo), hi)
}

var words = []string{"alpha", "bravo", "cedar", "delta", "ember", "fjord", "grove", "harbor", "iris", "juniper",
	"kestrel", "lumen", "maple", "nova", "orchid", "pebble", "quartz", "river", "sable", "tundra", "umber", "vale",
	"willow", "xenon", "yarrow", "zephyr"}

func (g *generator) str(o *obj) any {
	format := o.str("format")
	minLen, hasMin := num(o.vals["minLength"])
	maxLen, hasMax := num(o.vals["maxLength"])
	var s string
	if g.rnd == nil {
		s = "string"
		if f, ok := formatSamples[format]; ok {
			return g.literal(f)
		}
	} else {
		var formatted bool
		if s, formatted = g.dynamicString(format); formatted {
			return g.literal(s)
		}
		if f, ok := formatSamples[format]; ok && format != "password" {
			return g.literal(f) // a format generated data does not cover: its sample is valid
		}
	}
	if hasMin && float64(len(s)) < minLen {
		if minLen > float64(g.left()) {
			g.over = true // longer than the whole answer may be
			return nil
		}
		n := int(minLen)
		s = strings.Repeat(s, n/len(s)+1)[:n]
	}
	if hasMax && len(s) > int(maxLen) {
		s = s[:max(int(maxLen), 0)]
	}
	return g.literal(s)
}

func (g *generator) word() string { return words[g.rnd.IntN(len(words))] }

// dynamicString is a random string of the format, and whether it is one; for a format it
// does not cover (and none), words.
func (g *generator) dynamicString(format string) (string, bool) {
	r := g.rnd
	t := time.Date(2000+r.IntN(30), time.Month(1+r.IntN(12)), 1+r.IntN(28), r.IntN(24), r.IntN(60), r.IntN(60), 0, time.UTC)
	switch format {
	case "date":
		return t.Format(time.DateOnly), true
	case "date-time":
		return t.Format(time.RFC3339), true
	case "time":
		return t.Format("15:04:05Z"), true
	case "email", "idn-email":
		return fmt.Sprintf("%s.%s%d@example.com", g.word(), g.word(), r.IntN(100)), true
	case "uri", "url", "iri":
		return fmt.Sprintf("https://%s.example.com/%s", g.word(), g.word()), true
	case "hostname":
		return g.word() + ".example.com", true
	case "ipv4":
		return fmt.Sprintf("10.%d.%d.%d", r.IntN(256), r.IntN(256), 1+r.IntN(254)), true
	case "ipv6":
		return fmt.Sprintf("2001:db8::%x:%x", r.IntN(65536), r.IntN(65536)), true
	case "uuid":
		return fmt.Sprintf("%08x-%04x-4%03x-%04x-%012x", r.Uint32(), r.IntN(1<<16), r.IntN(1<<12), 0x8000|r.IntN(1<<14), r.Int64N(1<<48)), true
	case "byte":
		return "ZHluYW1pYw==", true
	case "duration":
		return fmt.Sprintf("P%dD", 1+r.IntN(30)), true
	}
	n := 1 + r.IntN(2)
	parts := make([]string, n)
	for i := range parts {
		parts[i] = g.word()
	}
	return strings.Join(parts, " "), false
}

// openRange gives a missing bound of a dynamic value's range a value: from 0 (or 1,000
// below a negative maximum) to 1,000 above the minimum.
func openRange(lo, hi float64, hasLo, hasHi bool) (float64, float64) {
	if !hasLo {
		lo = 0
		if hasHi && hi < 0 {
			lo = hi - 1000
		}
	}
	if !hasHi {
		hi = lo + 1000
	}
	return lo, hi
}
