package report

import (
	"encoding/xml"
	"fmt"
	"io"
)

type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Skipped  int          `xml:"skipped,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Skipped  int         `xml:"skipped,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Failure   *junitFailure `xml:"failure,omitempty"`
	Skipped   *junitSkipped `xml:"skipped,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitFailure struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

type junitSkipped struct {
	Message string `xml:"message,attr"`
}

// writeJUnit writes one test suite per checked source: a passing test case per rule
// without findings, and a test case per finding — failed for denies (and warnings with
// --fail-on-warn), passed with the warning on system-out otherwise, skipped when waived.
func writeJUnit(w io.Writer, r *Report) error {
	suite := junitSuite{Name: r.command() + " " + r.Source}
	hit := map[string]bool{}
	for _, f := range r.Findings {
		hit[f.Rule.ID] = true
		c := junitCase{Classname: f.Rule.ID + " " + f.Rule.Title, Name: fmt.Sprintf("%s %s", f.Rule.ID, resourceName(f.URN))}
		text := fmt.Sprintf("%s\nresource: %s\nfix: %s", messageWithNote(f), resourceName(f.URN), f.Rule.Fix)
		switch {
		case f.Waiver != nil:
			c.Skipped = &junitSkipped{Message: fmt.Sprintf("waived until %s: %s", f.Waiver.Expires, f.Waiver.Reason)}
			suite.Skipped++
		case r.failing(f):
			c.Failure = &junitFailure{Message: f.Message, Type: string(f.Level), Text: text}
			suite.Failures++
		default:
			c.SystemOut = "warning: " + text
		}
		suite.Cases = append(suite.Cases, c)
	}
	for _, rule := range allRules(r) {
		if !hit[rule.ID] {
			suite.Cases = append(suite.Cases, junitCase{Classname: rule.ID + " " + rule.Title, Name: rule.ID + " " + rule.Title})
		}
	}
	suite.Tests = len(suite.Cases)
	doc := junitSuites{Name: "eventpipe", Tests: suite.Tests, Failures: suite.Failures, Skipped: suite.Skipped, Suites: []junitSuite{suite}}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return fmt.Errorf("writing JUnit XML: %w", err)
	}
	_, err := io.WriteString(w, "\n")
	return err
}

func resourceName(urn string) string {
	if urn == "" {
		return "(stack)"
	}
	return urn
}
