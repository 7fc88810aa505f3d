package audit

// This file is how the audit hands its model to the rules: the same check.Run (configuration,
// evaluation, waivers, outputs) `eventpipe check` uses, one group of projects at a time,
// with the drift from the stack in the document the rules read.

import (
	"context"
	"fmt"

	"github.com/eventpipe/eventpipe/audit/model"
	"github.com/eventpipe/eventpipe/audit/summary"
	"github.com/eventpipe/eventpipe/policies/check"
	"github.com/eventpipe/eventpipe/policies/evaluate"
	"github.com/eventpipe/eventpipe/policies/plan"
	"github.com/eventpipe/eventpipe/policies/report"
)

// Evaluation is what the rules found in an audit.
type Evaluation struct {
	// Findings are every finding, sorted (evaluate.Sort).
	Findings []evaluate.Finding
	// Resources counts the resources judged.
	Resources int
}

// Evaluate runs the rules on the model, one group of projects that refer to one another at
// a time (see model.Document.Split), and on the differences from the stack in a document
// of their own (EP200), each located by locate at the stack config line that declared its
// resource.
func Evaluate(ctx context.Context, run *check.Run, doc *model.Document, source string, locate func(urn string) (string, int)) (*Evaluation, error) {
	docs := doc.Split()
	if len(doc.Drift) > 0 {
		docs = append(docs, &model.Document{Drift: doc.Drift})
	}
	out := &Evaluation{}
	for _, d := range docs {
		data, err := d.JSON()
		if err != nil {
			return nil, err
		}
		p, err := plan.Parse(data, source)
		if err != nil {
			return nil, fmt.Errorf("reading the audit model: %w", err)
		}
		// Parse locates each resource at its line of data, a document only this process
		// holds: citing it as a line of the inputs (several files, or none for a live
		// read) would send the reader to the wrong place. Only stack lines are cited.
		p.Locations = nil
		for _, df := range d.Drift {
			if file, line := locate(df.URN); file != "" {
				if p.Locations == nil {
					p.Locations = map[string]plan.Location{}
				}
				p.Locations[df.URN] = plan.Location{File: file, Line: line}
			}
		}
		res, err := run.Check(ctx, p)
		if err != nil {
			return nil, err
		}
		out.Findings = append(out.Findings, res.Findings...)
		out.Resources += res.Resources
	}
	evaluate.Sort(out.Findings)
	return out, nil
}

// Annotate adds to each finding who manages its resource (as its note) and where to fix
// it (after the rule's own fix, which says what to change).
func Annotate(findings []evaluate.Finding, owner func(urn, ruleID string) (who, where string)) {
	for i := range findings {
		f := &findings[i]
		who, where := owner(f.URN, f.Rule.ID)
		if who == "" {
			continue
		}
		f.Note = joinNote(f.Note, "managed by "+who)
		if where != "" {
			f.Rule.Fix = f.Rule.Fix + " Where: " + where
		}
	}
}

func joinNote(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

// summaryFindings converts the report's findings for the summary; project names the
// project of a URN.
func summaryFindings(rep *report.Report, project func(urn string) string) []summary.Finding {
	out := make([]summary.Finding, 0, len(rep.Findings))
	for _, f := range rep.Findings {
		out = append(out, summary.Finding{
			Project: project(f.URN), RuleID: f.Rule.ID, Title: f.Rule.Title, Severity: f.Rule.Severity,
			Level: string(f.Level), Resource: resourceLabel(f), Message: f.Message, Owner: f.Note,
			Fix: f.Rule.Fix, Waived: f.Waiver != nil,
		})
	}
	return out
}

func resourceLabel(f evaluate.Finding) string {
	if f.Name != "" {
		return f.Name
	}
	return f.URN
}
