package report

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/owenrumney/go-sarif/v2/sarif"

	"github.com/eventpipe/eventpipe/policies/evaluate"
)

// informationURI is where the rules are documented.
const informationURI = "https://github.com/eventpipe/eventpipe#policy-checks"

// srcRoot is the uriBaseId of every artifact inside the source root: GitHub code scanning
// resolves it, like any relative path, against the root of the analysed repository.
const srcRoot = "%SRCROOT%"

// securitySeverity maps a rule severity to the CVSS-like score GitHub code scanning reads
// from a rule's properties["security-severity"]: above 9.0 critical, 7.0-8.9 high, 4.0-6.9
// medium, 0.1-3.9 low. Informational rules get none (they are not security results).
var securitySeverity = map[string]string{
	"critical": "9.5",
	"high":     "8.0",
	"medium":   "5.5",
	"low":      "3.0",
}

// writeSARIF writes a SARIF 2.1.0 log as GitHub code scanning reads it: every rule with
// its description, fix as help, severity and security-severity; every finding as a result
// with its rule id, level, message, a physical location relative to the source root (the
// stack config line that declared the resource, or the input file line naming it), the
// resource URN as logical location, and a partial fingerprint derived from the rule id and
// the URN, so an alert keeps its identity when lines move. Waived findings carry an
// external suppression. The run's automationDetails.id names the checked source, so the
// runs of several stacks form one category each and can be uploaded together.
func writeSARIF(w io.Writer, r *Report) error {
	root, err := r.sourceRoot()
	if err != nil {
		return err
	}
	log, err := sarif.New(sarif.Version210)
	if err != nil {
		return fmt.Errorf("creating SARIF log: %w", err)
	}
	run := sarif.NewRunWithInformationURI("eventpipe", informationURI)
	if r.Version != "" {
		run.Tool.Driver.WithVersion(r.Version)
	}
	run.WithOriginalUriBaseIds(map[string]*sarif.ArtifactLocation{
		srcRoot: sarif.NewSimpleArtifactLocation(fileURI(root) + "/").
			WithDescriptionText("The root of the repository the check ran in."),
	})
	run.WithAutomationDetails(sarif.NewRunAutomationDetails().WithID("eventpipe/" + category(root, r.Source) + "/"))
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
		tags := []string{"eventpipe", rule.Severity}
		if score, ok := securitySeverity[rule.Severity]; ok {
			pb.Add("security-severity", score)
			tags = append(tags, "security")
		}
		pb.Add("tags", tags)
		d.AttachPropertyBag(pb)
	}
	occurrences := map[string]int{}
	for _, f := range r.Findings {
		res := sarif.NewRuleResult(f.Rule.ID).
			WithRuleIndex(index[f.Rule.ID]).
			WithLevel(sarifLevel(f.Level)).
			WithMessage(sarif.NewTextMessage(messageWithNote(f)))
		identity := fingerprint(f)
		occurrences[identity]++
		// GitHub matches alerts across commits by this key alone; the usual value hashes
		// the text around the line, which moves with every edit of a stack config.
		res.WithPartialFingerPrints(map[string]any{"primaryLocationLineHash": fmt.Sprintf("%s:%d", identity, occurrences[identity])})
		loc := sarif.NewLocation()
		if f.Location != nil && f.Location.File != "" {
			pl := sarif.NewPhysicalLocation().WithArtifactLocation(artifactLocation(root, f.Location.File))
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
			res.AddSuppression(suppression(root, f, loc))
		}
		run.AddResult(res)
	}
	if r.Environment != "" || r.Incomplete != "" {
		// What the verdict rests on: the environment's profile, and a document that
		// leaves resources out.
		inv := sarif.NewInvocation().WithExecutionSuccess(true)
		if r.Environment != "" {
			inv.AddTToolExecutionNotification(sarif.NewNotification().WithLevel("note").WithTextMessage("environment: " + r.Environment))
		}
		if r.Incomplete != "" {
			inv.AddTToolExecutionNotification(sarif.NewNotification().WithLevel("warning").WithTextMessage("incomplete document: " + r.Incomplete))
		}
		run.AddInvocations(inv)
	}
	log.AddRun(run)
	return log.PrettyWrite(w)
}

// fingerprint identifies what a finding is about, independent of where it is printed: its
// rule id and resource (URN or Terraform address), or its message when it names no
// resource. Findings sharing one are told apart by their order (see writeSARIF).
func fingerprint(f evaluate.Finding) string {
	subject := f.URN
	if subject == "" {
		subject = f.Message
	}
	h := sha256.Sum256([]byte(f.Rule.ID + "\x00" + subject))
	return hex.EncodeToString(h[:8])
}

// artifactLocation points at file (absolute, or relative to the working directory): a
// path relative to %SRCROOT% when it is a file inside the source root; otherwise an
// absolute file URI, or the name as given when it is not a file at all ("stdin"). Code
// scanning can show only the first kind in the repository.
func artifactLocation(root, file string) *sarif.ArtifactLocation {
	if rel, ok := underRoot(root, file); ok {
		return sarif.NewSimpleArtifactLocation(escapePath(rel)).WithUriBaseId(srcRoot)
	}
	if _, err := os.Stat(file); err != nil && !filepath.IsAbs(file) {
		return sarif.NewSimpleArtifactLocation(escapePath(filepath.ToSlash(file)))
	}
	abs, err := filepath.Abs(file)
	if err != nil {
		abs = file
	}
	return sarif.NewSimpleArtifactLocation(fileURI(abs))
}

// escapePath is a slash-separated relative path as a URI reference.
func escapePath(p string) string { return (&url.URL{Path: p}).EscapedPath() }

// fileURI is the file: URI of an absolute path.
func fileURI(abs string) string {
	p := filepath.ToSlash(abs)
	if !strings.HasPrefix(p, "/") { // a Windows drive path
		p = "/" + p
	}
	return (&url.URL{Scheme: "file", Path: p}).String()
}

// category names the checked source for the run's automationDetails.id: "stack/<name>"
// for a rendered stack, "stdin", or the input file's path relative to the source root
// (its base name when it lies outside).
func category(root, source string) string {
	switch {
	case strings.HasPrefix(source, "stack "):
		return "stack/" + strings.TrimPrefix(source, "stack ")
	case source == "-" || source == "":
		return "stdin"
	}
	if rel, ok := underRoot(root, source); ok {
		return rel
	}
	return path.Base(filepath.ToSlash(source))
}

func sarifLevel(l evaluate.Level) string {
	if l == evaluate.Deny {
		return "error"
	}
	return "warning"
}

func messageWithNote(f evaluate.Finding) string {
	if f.Note == "" {
		return f.Message
	}
	return f.Message + " (" + f.Note + ")"
}

// suppression records a waiver. go-sarif serialises unset location and guid as null, which
// SARIF 2.1.0 forbids, so both are always set: the waiver's configuration file (or the
// result's own location) and a GUID derived from the waiver.
func suppression(root string, f evaluate.Finding, resultLoc *sarif.Location) *sarif.Suppression {
	w := f.Waiver
	s := sarif.NewSuppression("external").WithStatus("accepted").
		WithJustifcation(fmt.Sprintf("%s (waiver for %s until %s)", w.Reason, w.URN, w.Expires)).
		WithGuid(guid(w.RuleID, w.URN, w.Expires, f.URN))
	if w.Source != "" {
		s.WithLocation(sarif.NewLocationWithPhysicalLocation(sarif.NewPhysicalLocation().WithArtifactLocation(artifactLocation(root, w.Source))))
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
