package report

import (
	"encoding/json"
	"io"

	"github.com/eventpipe/eventpipe/policies/evaluate"
	"github.com/eventpipe/eventpipe/policies/plan"
)

type jsonFinding struct {
	RuleID   string           `json:"ruleId"`
	Rule     string           `json:"rule"`
	Title    string           `json:"title"`
	Severity string           `json:"severity"`
	Level    evaluate.Level   `json:"level"`
	Message  string           `json:"message"`
	Fix      string           `json:"fix"`
	URN      string           `json:"urn,omitempty"`
	Type     string           `json:"type,omitempty"`
	Name     string           `json:"name,omitempty"`
	Note     string           `json:"note,omitempty"`
	Waiver   *evaluate.Waiver `json:"waiver,omitempty"`
	Location *plan.Location   `json:"location,omitempty"`
}

type jsonReport struct {
	Source    string `json:"source"`
	Format    string `json:"format"`
	Resources int    `json:"resources"`
	// Environment is the environment judged and its profile.
	Environment string `json:"environment,omitempty"`
	// Complete is whether the document shows every resource; Incomplete says, when it
	// does not, what it leaves out and what to run instead.
	Complete   bool          `json:"complete"`
	Incomplete string        `json:"incomplete,omitempty"`
	Passed     bool          `json:"passed"`
	Denies     int           `json:"denies"`
	Warnings   int           `json:"warnings"`
	Waived     int           `json:"waived"`
	Findings   []jsonFinding `json:"findings"`
}

func writeJSON(w io.Writer, r *Report) error {
	d, warn, waived := r.Counts()
	out := jsonReport{
		Source: r.Source, Format: r.InputFormat, Resources: r.Resources,
		Complete: r.Incomplete == "", Incomplete: r.Incomplete, Environment: r.Environment,
		Passed: !r.Failed(), Denies: d, Warnings: warn, Waived: waived,
		Findings: make([]jsonFinding, 0, len(r.Findings)),
	}
	for _, f := range r.Findings {
		out.Findings = append(out.Findings, jsonFinding{
			RuleID: f.Rule.ID, Rule: f.Rule.Name, Title: f.Rule.Title, Severity: f.Rule.Severity,
			Level: f.Level, Message: f.Message, Fix: f.Rule.Fix, URN: f.URN, Type: f.Type, Name: f.Name,
			Note: f.Note, Waiver: f.Waiver, Location: f.Location,
		})
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}
