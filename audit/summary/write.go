package summary

import (
	_ "embed"
	"fmt"
	htmltemplate "html/template"
	"io"
	"strings"
	texttemplate "text/template"

	"github.com/eventpipe/eventpipe/policies/report"
)

//go:embed summary.md.tmpl
var markdownSource string

//go:embed summary.html.tmpl
var htmlSource string

var funcs = map[string]any{
	"cell":   cell,
	"owners": ownersText,
	"join":   func(list []string) string { return strings.Join(list, ", ") },
	// gapCount is how many things were not read: resources, or one for a project-wide gap.
	"gapCount": func(gs []Gap) int {
		n := 0
		for _, g := range gs {
			n += max(g.Count, 1)
		}
		return n
	},
	// tally counts denies and warnings as every verdict does ("1 deny, 2 warnings").
	"tally": report.Tally,
	"verdict": func(failed bool) string {
		if failed {
			return "FAILED"
		}
		return "passed"
	},
}

var (
	markdownTemplate = texttemplate.Must(texttemplate.New("summary.md").Funcs(funcs).Parse(markdownSource))
	htmlTemplate     = htmltemplate.Must(htmltemplate.New("summary.html").Funcs(funcs).Parse(htmlSource))
)

// Markdown writes the summary as Markdown.
func (s *Summary) Markdown(w io.Writer) error {
	if err := markdownTemplate.Execute(w, s); err != nil {
		return fmt.Errorf("writing the Markdown summary: %w", err)
	}
	return nil
}

// HTML writes the summary as a self-contained HTML page.
func (s *Summary) HTML(w io.Writer) error {
	if err := htmlTemplate.Execute(w, s); err != nil {
		return fmt.Errorf("writing the HTML summary: %w", err)
	}
	return nil
}

// cell makes text safe inside a Markdown table cell: no line breaks, pipes escaped.
func cell(s string) string {
	s = strings.ReplaceAll(s, "\r", "")
	s = strings.ReplaceAll(s, "\n", " ")
	return strings.ReplaceAll(s, "|", `\|`)
}

// ownersText is "12 no infrastructure code, 3 Pulumi (…)".
func ownersText(cs []Count) string {
	if len(cs) == 0 {
		return "—"
	}
	parts := make([]string, len(cs))
	for i, c := range cs {
		parts[i] = fmt.Sprintf("%d %s", c.N, c.Label)
	}
	return strings.Join(parts, ", ")
}
