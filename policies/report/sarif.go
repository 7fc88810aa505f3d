package report

import (
	"crypto/sha256"
	"fmt"
	"io"
	"strings"

	"github.com/owenrumney/go-sarif/v2/sarif"

	"github.com/eventpipe/eventpipe/policies/engine"
)

// informationURI is where the rules are documented.
const informationURI = "https://github.com/eventpipe/eventpipe#policy-checks"

// writeSARIF writes a SARIF 2.1.0 log: every rule with its description and fix as help,
// every finding as a result with its rule id, level, message, a physical location (the
// stack config line that declared the resource, or the input file line naming it) and the
// resource URN as logical location. Waived findings carry an external suppression.
func writeSARIF(w io.Writer, r *Report) error {
	log, err := sarif.New(sarif.Version210)
	if err != nil {
		return fmt.Errorf("creating SARIF log: %w", err)
	}
	run := sarif.NewRunWithInformationURI("eventpipe", informationURI)
	if r.Version != "" {
		run.Tool.Driver.WithVersion(r.Version)
	}
	index := map[string]int{}
	for i, rule := range allRules(r) {
		index[rule.ID] = i
		d := run.AddRule(rule.ID).
			WithName(rule.Name).
			WithShortDescription(sarif.NewMultiformatMessageString(rule.Title)).
			WithFullDescription(sarif.NewMultiformatMessageString(rule.Description)).
			WithHelp(sarif.NewMultiformatMessageString("Fix: " + rule.Fix).WithMarkdown("**Fix:** " + rule.Fix)).
			WithHelpURI(informationURI).
			WithDefaultConfiguration(sarif.NewReportingConfiguration().WithLevel(sarifLevel(rule.Level)))
		pb := sarif.NewPropertyBag()
		pb.Add("severity", rule.Severity)
		pb.Add("rego", rule.Name)
		pb.Add("tags", []string{"eventpipe", rule.Severity})
		d.AttachPropertyBag(pb)
	}
	for _, f := range r.Findings {
		res := sarif.NewRuleResult(f.Rule.ID).
			WithRuleIndex(index[f.Rule.ID]).
			WithLevel(sarifLevel(f.Level)).
			WithMessage(sarif.NewTextMessage(messageWithNote(f)))
		loc := sarif.NewLocation()
		if f.Location != nil && f.Location.File != "" {
			pl := sarif.NewPhysicalLocation().WithArtifactLocation(sarif.NewSimpleArtifactLocation(f.Location.File))
			if f.Location.Line > 0 {
				pl.WithRegion(sarif.NewRegion().WithStartLine(f.Location.Line))
			}
			loc.WithPhysicalLocation(pl)
		}
		if f.URN != "" {
			ll := sarif.NewLogicalLocation().WithName(f.Name).WithFullyQualifiedName(f.URN).WithKind("resource")
			if f.Name == "" {
				ll.WithName(f.URN)
			}
			loc.AddLogicalLocations(ll)
		}
		if loc.PhysicalLocation != nil || len(loc.LogicalLocations) > 0 {
			res.AddLocation(loc)
		}
		if f.Waiver != nil {
			res.AddSuppression(suppression(f, loc))
		}
		run.AddResult(res)
	}
	log.AddRun(run)
	return log.PrettyWrite(w)
}

func sarifLevel(l engine.Level) string {
	if l == engine.Deny {
		return "error"
	}
	return "warning"
}

func messageWithNote(f engine.Finding) string {
	if f.Note == "" {
		return f.Message
	}
	return f.Message + " (" + f.Note + ")"
}

// suppression records a waiver. go-sarif serialises unset location and guid as null, which
// SARIF 2.1.0 forbids, so both are always set: the waiver's configuration file (or the
// result's own location) and a GUID derived from the waiver.
func suppression(f engine.Finding, resultLoc *sarif.Location) *sarif.Suppression {
	w := f.Waiver
	s := sarif.NewSuppression("external").WithStatus("accepted").
		WithJustifcation(fmt.Sprintf("%s (waiver for %s until %s)", w.Reason, w.URN, w.Expires)).
		WithGuid(guid(w.RuleID, w.URN, w.Expires, f.URN))
	if w.Source != "" {
		s.WithLocation(sarif.NewLocationWithPhysicalLocation(sarif.NewPhysicalLocation().WithArtifactLocation(sarif.NewSimpleArtifactLocation(w.Source))))
	} else {
		s.WithLocation(resultLoc)
	}
	return s
}

// guid formats a SHA-256 of parts as an RFC 4122 version-5-style GUID.
func guid(parts ...string) string {
	h := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	h[6] = (h[6] & 0x0f) | 0x50
	h[8] = (h[8] & 0x3f) | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", h[0:4], h[4:6], h[6:8], h[8:10], h[10:16])
}
