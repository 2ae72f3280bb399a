package cmd

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/lipgloss/table"
)

// checkedWriter is a command's standard output: it remembers the first write that failed (a
// full disk, a closed file), so that a command whose results were not written exits 1, not 0.
type checkedWriter struct {
	w   io.Writer
	err error
}

func (c *checkedWriter) Write(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	n, err := c.w.Write(p)
	if err != nil {
		c.err = err
	}
	return n, err
}

// writeError is the first error writing to w, when w is a command's checked output.
func writeError(w io.Writer) error {
	if c, ok := w.(*checkedWriter); ok && c.err != nil {
		return fmt.Errorf("write the output: %w", c.err)
	}
	return nil
}

// printer writes a command's results: JSON (exactly the HTTP body's shape) or lipgloss tables.
// It holds no business logic.
type printer struct {
	out io.Writer
	tty bool // colours and progress bars only on a terminal
}

func (f *factory) printer() *printer {
	return &printer{out: f.out, tty: isTerminal(f.out)}
}

// err is the first error writing the output, if any.
func (p *printer) err() error { return writeError(p.out) }

// json writes v as indented JSON.
func (p *printer) json(v any) error {
	enc := json.NewEncoder(p.out)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

var (
	headerStyle = lipgloss.NewStyle().Bold(true).Padding(0, 1)
	cellStyle   = lipgloss.NewStyle().Padding(0, 1)
	titleStyle  = lipgloss.NewStyle().Bold(true)
)

// terminalSafe returns s with what a terminal would act on, or show other than as stored,
// escaped as Go writes it: control characters (C0, DEL, C1: "\x1b", "\r", "\u009b"), the
// bidirectional formatting characters (which reorder what follows, "\u202e") and bytes that are
// not UTF-8 ("\xff"). Tables and cards show stored texts (template ids, user names, key names:
// any user's input) that must never reach a terminal as escape sequences. JSON output escapes
// control characters itself and is left as it is, the HTTP body's exact shape.
func terminalSafe(s string) string {
	if !strings.ContainsFunc(s, unsafeRune) && utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for i, r := range s {
		switch {
		case r == utf8.RuneError:
			if _, size := utf8.DecodeRuneInString(s[i:]); size == 1 {
				fmt.Fprintf(&b, `\x%02x`, s[i])
				continue
			}
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case unsafeRune(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// unsafeRune reports whether a terminal would act on r rather than show it: a control
// character, or a bidirectional formatting character.
func unsafeRune(r rune) bool {
	switch {
	case r < 0x20, r >= 0x7f && r <= 0x9f:
		return true
	case r == 0x061c, r == 0x200e, r == 0x200f, r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true
	}
	return false
}

// terminalSafeAll is terminalSafe on each of ss, in a new slice.
func terminalSafeAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = terminalSafe(s)
	}
	return out
}

// table writes rows under headers as a bordered table, their texts made terminalSafe.
func (p *printer) table(headers []string, rows [][]string) {
	safe := make([][]string, len(rows))
	for i, row := range rows {
		safe[i] = terminalSafeAll(row)
	}
	t := table.New().Headers(terminalSafeAll(headers)...).Rows(safe...).
		StyleFunc(func(row, _ int) lipgloss.Style {
			if row == table.HeaderRow {
				return headerStyle
			}
			return cellStyle
		})
	if !p.tty {
		t = t.BorderStyle(lipgloss.NewStyle())
	}
	fmt.Fprintln(p.out, t.Render())
}

// title writes a bold heading line (terminalSafe).
func (p *printer) title(s string) {
	s = terminalSafe(s)
	if p.tty {
		s = titleStyle.Render(s)
	}
	fmt.Fprintln(p.out, s)
}

// card writes label/value pairs as a small box, their texts made terminalSafe.
func (p *printer) card(title string, pairs [][2]string) {
	title = terminalSafe(title)
	labels := lipgloss.NewStyle().Bold(true)
	var body string
	for i, kv := range pairs {
		if i > 0 {
			body += "\n"
		}
		body += labels.Render(terminalSafe(kv[0])+":") + " " + terminalSafe(kv[1])
	}
	box := lipgloss.NewStyle().Border(lipgloss.RoundedBorder()).Padding(0, 1)
	if title != "" {
		body = titleStyle.Render(title) + "\n" + body
	}
	fmt.Fprintln(p.out, box.Render(body))
}
