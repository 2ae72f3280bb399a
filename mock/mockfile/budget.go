package mockfile

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"text/template"
	"time"
)

// maxMadeText bounds the text one render's functions may make in all (printf, print, println,
// html, js, urlquery, json, upper, lower, string), whether it is written or only kept in a
// variable: a template that multiplies a value from variable to variable, or remakes one in a
// loop without writing it, stops there instead of taking gigabytes or running for minutes.
const maxMadeText = 4 * maxRender

var errMadeTooMuch = fmt.Errorf("the template's functions made over %d MB of text", maxMadeText>>20)

// renderBudget is what is left to one render: the text its functions may still make, and its
// deadline, checked each time a function makes text (a loop that only builds values writes
// nothing the writer could stop).
type renderBudget struct {
	deadline time.Time
	left     int
}

// room refuses a function call whose text could exceed what is left, before it is made.
func (b *renderBudget) room(n int) error {
	if n > b.left {
		return errMadeTooMuch
	}
	return nil
}

// take counts s, once made, against the budget.
func (b *renderBudget) take(s string) (string, error) {
	if len(s) > b.left {
		return "", errMadeTooMuch
	}
	b.left -= len(s)
	if time.Now().After(b.deadline) {
		return "", errRenderTooSlow
	}
	return s, nil
}

// funcs are the functions that make text, bounded by b. They replace text/template's
// builtins of the same names and the helpers of funcMap.
func (b *renderBudget) funcs() template.FuncMap {
	fm := funcMap()
	// text wraps f, whose text is at most grow times the length of its string arguments
	// (escaping turns one byte into up to six).
	text := func(grow int, f func(...any) string) func(...any) (string, error) {
		return func(args ...any) (string, error) {
			if err := b.room(grow * textLen(args)); err != nil {
				return "", err
			}
			return b.take(f(args...))
		}
	}
	str := func(f func(string) string) func(string) (string, error) {
		return func(s string) (string, error) {
			if err := b.room(3 * len(s)); err != nil {
				return "", err
			}
			return b.take(f(s))
		}
	}
	gen := fm["string"].(func(int, ...string) (string, error))
	return template.FuncMap{
		"printf": func(format string, args ...any) (string, error) {
			if err := b.room(formatLen(format, args)); err != nil {
				return "", err
			}
			return b.take(fmt.Sprintf(format, args...))
		},
		"print":    text(1, fmt.Sprint),
		"println":  text(1, fmt.Sprintln),
		"html":     text(6, template.HTMLEscaper),
		"js":       text(6, template.JSEscaper),
		"urlquery": text(3, template.URLQueryEscaper),
		"json": func(v any) (string, error) {
			if err := b.room(6 * textLen([]any{v})); err != nil {
				return "", err
			}
			out, err := json.Marshal(v)
			if err != nil {
				return "", err
			}
			return b.take(string(out))
		},
		"upper": str(strings.ToUpper),
		"lower": str(strings.ToLower),
		"string": func(n int, charset ...string) (string, error) {
			s, err := gen(n, charset...)
			if err != nil {
				return "", err
			}
			return b.take(s)
		},
	}
}

// textLen is the length of the strings among args: what a function making text from them
// copies at least.
func textLen(args []any) int {
	n := 0
	for _, a := range args {
		switch v := a.(type) {
		case string:
			n += len(v)
		case []byte:
			n += len(v)
		}
	}
	return n
}

// formatLen bounds what fmt.Sprintf(format, args...) copies before it is made: the format, the
// string arguments, and every width and precision, written ("%01000000d") or taken from an
// argument ("%0*d"). A width fmt refuses as too large is counted too: a template has no use
// for one, and fmt's own limit on written widths is looser than its documented million.
func formatLen(format string, args []any) int {
	n := len(format) + textLen(args)
	arg := 0 // the argument the next verb or * takes, as fmt counts them
	// index reads an explicit argument index ("%[2]d") at i.
	index := func(i int) int {
		if i < len(format) && format[i] == '[' {
			if j := strings.IndexByte(format[i:], ']'); j > 0 {
				if k, err := strconv.Atoi(format[i+1 : i+j]); err == nil {
					arg = k - 1
				}
				return i + j + 1
			}
		}
		return i
	}
	// size reads a width or a precision at i: digits, or * and the argument it takes.
	size := func(i int) int {
		if i < len(format) && format[i] == '*' {
			if arg >= 0 && arg < len(args) {
				if w, ok := widthArg(args[arg]); ok {
					n += w
				}
			}
			arg++
			return i + 1
		}
		j := i
		for j < len(format) && '0' <= format[j] && format[j] <= '9' {
			j++
		}
		if j > i {
			w, err := strconv.Atoi(format[i:j])
			if err != nil || w > maxMadeText { // counted at most once past the bound
				w = maxMadeText + 1
			}
			n += w
		}
		return j
	}
	for i := 0; i < len(format); i++ {
		if format[i] != '%' {
			continue
		}
		// fmt's order: flags, [index] width, .[index] precision, [index] verb.
		for i++; i < len(format) && strings.IndexByte("#0+- ", format[i]) >= 0; i++ {
		}
		i = size(index(i))
		if i < len(format) && format[i] == '.' {
			i = size(index(i + 1))
		}
		i = index(i)
		if i < len(format) && format[i] != '%' {
			arg++ // the verb takes an argument; "%%" takes none
		}
	}
	return n
}

// widthArg is the magnitude of a, an argument that gives a width, when it is an integer,
// at most maxMadeText + 1 (each width counted is at most that, so their sum cannot overflow).
func widthArg(a any) (int, bool) {
	const most = maxMadeText + 1
	v := reflect.ValueOf(a)
	switch v.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		w := v.Int()
		if w < -most || w > most {
			return most, true
		}
		return int(max(w, -w)), true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return int(min(v.Uint(), most)), true
	}
	return 0, false
}
