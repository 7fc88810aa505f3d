package report

import (
	"bufio"
	"fmt"
	"io"
	"strings"

	"github.com/eventpipe/eventpipe/internal/english"
)

// writeText prints findings grouped by resource: level, rule id, severity, title, the
// message, the fix, and any note or waiver; then a one-line summary.
func writeText(w io.Writer, r *Report) error {
	b := bufio.NewWriter(w)
	fmt.Fprintf(b, "%s: %s (%s, %s, %s)\n", r.command(), r.Source, r.InputFormat,
		english.Count(r.Resources, "resource", "resources"), english.Count(len(r.Rules), "rule", "rules"))
	if r.Environment != "" {
		line(b, "environment: ", r.Environment)
	}
	if r.Incomplete != "" {
		line(b, "incomplete document: ", r.Incomplete)
	}
	current := "\x00"
	for _, f := range r.Findings {
		if f.URN != current {
			current = f.URN
			b.WriteString("\n")
			switch {
			case f.URN == "":
				b.WriteString("stack\n")
			case f.Type != "":
				fmt.Fprintf(b, "%s (%s)", f.URN, f.Type)
			default:
				b.WriteString(f.URN)
			}
			if loc := location(f); loc != "" {
				fmt.Fprintf(b, "  %s", loc)
			}
			if f.URN != "" {
				b.WriteString("\n")
			}
		}
		label := strings.ToUpper(string(f.Level))
		if f.Waiver != nil {
			label = "WAIVED"
		}
		// Written piece by piece: fmt costs more than the rest of a report of thousands.
		b.WriteString("  ")
		b.WriteString(label)
		for range 6 - len(label) {
			b.WriteByte(' ')
		}
		line(b, " ", f.Rule.ID, " [", f.Rule.Severity, "] ", f.Rule.Title)
		line(b, "         ", f.Message)
		if f.Note != "" {
			line(b, "         note: ", f.Note)
		}
		if f.Waiver != nil {
			line(b, "         waived until ", f.Waiver.Expires, ": ", f.Waiver.Reason)
		} else {
			line(b, "         fix: ", f.Rule.Fix)
		}
	}
	d, warn, waived := r.Counts()
	verdict := "PASS"
	if r.Failed() {
		verdict = "FAIL"
	}
	if r.Incomplete != "" {
		verdict += " (on an incomplete document: see above)"
	}
	fmt.Fprintf(b, "\n%s, %d waived: %s\n", Tally(d, warn), waived, verdict)
	return b.Flush()
}

// line writes parts and a newline.
func line(b *bufio.Writer, parts ...string) {
	for _, p := range parts {
		b.WriteString(p)
	}
	b.WriteByte('\n')
}
