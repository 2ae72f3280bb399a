package cmd

import (
	"encoding/json"
	"fmt"
	"io"

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

// table writes rows under headers as a bordered table.
func (p *printer) table(headers []string, rows [][]string) {
	t := table.New().Headers(headers...).Rows(rows...).
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

// title writes a bold heading line.
func (p *printer) title(s string) {
	if p.tty {
		s = titleStyle.Render(s)
	}
	fmt.Fprintln(p.out, s)
}

// card writes label/value pairs as a small box.
func (p *printer) card(title string, pairs [][2]string) {
	labels := lipgloss.NewStyle().Bold(true)
	var body string
	for i, kv := range pairs {
		if i > 0 {
			body += "\n"
		}
		body += labels.Render(kv[0]+":") + " " + kv[1]
	}
	box := lipgloss.NewStyle().Border(lipgloss.RoundedBorder()).Padding(0, 1)
	if title != "" {
		body = titleStyle.Render(title) + "\n" + body
	}
	fmt.Fprintln(p.out, box.Render(body))
}
