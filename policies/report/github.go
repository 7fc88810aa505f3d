package report

import (
	"bufio"
	"fmt"
	"io"
	"strings"

	"github.com/eventpipe/eventpipe/policies/evaluate"
)

// writeGitHub prints GitHub Actions workflow commands: ::error for findings that fail the
// check, ::warning for advisory ones, ::notice for waived ones, each with file and line
// when known (relative to the source root, as GitHub resolves it) so the annotation lands
// on the pull request's diff.
func writeGitHub(w io.Writer, r *Report) error {
	root, err := r.sourceRoot()
	if err != nil {
		return err
	}
	b := bufio.NewWriter(w)
	if r.Incomplete != "" {
		fmt.Fprintf(b, "::warning title=%s::%s\n", escapeProperty("Incomplete document: "+r.Source), escapeData(r.Incomplete))
	}
	for _, f := range r.Findings {
		cmd := "warning"
		switch {
		case f.Waiver != nil:
			cmd = "notice"
		case r.failing(f):
			cmd = "error"
		}
		var props []string
		if f.Location != nil && f.Location.File != "" {
			file := f.Location.File
			if rel, ok := underRoot(root, file); ok {
				file = rel
			}
			props = append(props, "file="+escapeProperty(file))
			if f.Location.Line > 0 {
				props = append(props, fmt.Sprintf("line=%d", f.Location.Line))
			}
		}
		props = append(props, "title="+escapeProperty(f.Rule.ID+" "+f.Rule.Title))
		fmt.Fprintf(b, "::%s %s::%s\n", cmd, strings.Join(props, ","), escapeData(annotation(f)))
	}
	d, warn, waived := r.Counts()
	fmt.Fprintf(b, "%s %s: %s, %d waived\n", r.command(), r.Source, Tally(d, warn), waived)
	return b.Flush()
}

func annotation(f evaluate.Finding) string {
	var s strings.Builder
	s.WriteString(messageWithNote(f))
	if f.URN != "" {
		s.WriteString("\nresource: " + f.URN)
	}
	if f.Waiver != nil {
		s.WriteString(fmt.Sprintf("\nwaived until %s: %s", f.Waiver.Expires, f.Waiver.Reason))
	} else {
		s.WriteString("\nfix: " + f.Rule.Fix)
	}
	return s.String()
}

// escapeData escapes a workflow command's message.
func escapeData(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A").Replace(s)
}

// escapeProperty escapes a workflow command property value.
func escapeProperty(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A", ":", "%3A", ",", "%2C").Replace(s)
}
