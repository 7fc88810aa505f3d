// Package report writes the findings of `eventpipe check` in the formats conftest users
// know: text (grouped by resource), json, sarif (2.1.0, via go-sarif), junit and github
// (workflow command annotations).
package report

import (
	"fmt"
	"io"
	"sort"

	"github.com/eventpipe/eventpipe/internal/english"
	"github.com/eventpipe/eventpipe/policies/evaluate"
)

// Format is an output format name.
type Format string

// The output formats.
const (
	Text   Format = "text"
	JSON   Format = "json"
	SARIF  Format = "sarif"
	JUnit  Format = "junit"
	GitHub Format = "github"
)

// Formats lists every output format.
func Formats() []Format { return []Format{Text, JSON, SARIF, JUnit, GitHub} }

// Report is the outcome of one check.
type Report struct {
	// Command names the tool in the report's headings: "eventpipe check" when empty,
	// "eventpipe audit" for an audit.
	Command string
	// Source names what was checked: a file, "-" for stdin, or "stack prod".
	Source string
	// InputFormat is the detected plan format.
	InputFormat string
	// Resources is the number of resources checked.
	Resources int
	// Environment is the environment the rules judged and its profile (which thresholds,
	// which strict rules mandatory), as check.Profile states it; "" when not given.
	Environment string
	// Incomplete says what the document leaves out and the command that shows everything
	// (evaluate.Result.Incomplete); "" for a complete document. Every output says it, as
	// the verdict cannot rest on what the document does not show.
	Incomplete string
	// Rules are the rules that ran (for SARIF rule metadata and JUnit passes).
	Rules []evaluate.Rule
	// Findings are every finding, waived ones included.
	Findings []evaluate.Finding
	// FailOnWarn makes unwaived warnings fail the check.
	FailOnWarn bool
	// Version is the eventpipe version for the SARIF tool driver.
	Version string
	// SourceRoot is the folder the SARIF results and GitHub annotations locate files
	// relative to: the repository root. Empty means RepositoryRoot of the working
	// directory. Finding locations are absolute or relative to the working directory.
	SourceRoot string
}

// command is r.Command, or "eventpipe check" when it is empty.
func (r *Report) command() string {
	if r.Command == "" {
		return "eventpipe check"
	}
	return r.Command
}

// Counts tallies unwaived denies and warnings, and waived findings.
func (r *Report) Counts() (denies, warnings, waived int) {
	for _, f := range r.Findings {
		switch {
		case f.Waiver != nil:
			waived++
		case f.Level == evaluate.Deny:
			denies++
		default:
			warnings++
		}
	}
	return denies, warnings, waived
}

// Tally is the count of denies and warnings as every output and verdict writes it:
// "1 deny, 2 warnings".
func Tally(denies, warnings int) string {
	return english.Count(denies, "deny", "denies") + ", " + english.Count(warnings, "warning", "warnings")
}

// Failed reports whether the check fails: an unwaived deny, or an unwaived warning with
// FailOnWarn.
func (r *Report) Failed() bool {
	d, w, _ := r.Counts()
	return d > 0 || (r.FailOnWarn && w > 0)
}

// failing reports whether one finding makes the check fail.
func (r *Report) failing(f evaluate.Finding) bool {
	return f.Waiver == nil && (f.Level == evaluate.Deny || r.FailOnWarn)
}

// Write writes r in format to w.
func Write(w io.Writer, format Format, r *Report) error {
	switch format {
	case Text:
		return writeText(w, r)
	case JSON:
		return writeJSON(w, r)
	case SARIF:
		return writeSARIF(w, r)
	case JUnit:
		return writeJUnit(w, r)
	case GitHub:
		return writeGitHub(w, r)
	}
	return fmt.Errorf("unknown output format %q: use one of %s", format, formatList())
}

// allRules is r.Rules plus any rule only findings mention (the expired-waiver rule),
// ordered by id.
func allRules(r *Report) []evaluate.Rule {
	seen := map[string]bool{}
	var out []evaluate.Rule
	for _, rule := range r.Rules {
		if !seen[rule.ID] {
			seen[rule.ID] = true
			out = append(out, rule)
		}
	}
	for _, f := range r.Findings {
		if !seen[f.Rule.ID] {
			seen[f.Rule.ID] = true
			out = append(out, f.Rule)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

func location(f evaluate.Finding) string {
	if f.Location == nil || f.Location.File == "" {
		return ""
	}
	if f.Location.Line > 0 {
		return fmt.Sprintf("%s:%d", f.Location.File, f.Location.Line)
	}
	return f.Location.File
}
