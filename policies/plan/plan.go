// Package plan reads the documents eventpipe checks — `pulumi preview --json` (with or
// without --show-sames, and the offline render, which has its shape), `pulumi stack export`
// (also the shape eventpipe's Pulumi analyzer builds from AnalyzeStack requests) and
// `terraform show -json PLANFILE` — as JSON, in OPA's value form. It does not interpret
// them: the rules' model of every document is Rego (policies/model*.rego), the one
// conftest and opa eval read too, so every runtime judges every document alike.
package plan

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/open-policy-agent/opa/v1/ast"
)

// ErrUnrecognised is returned (wrapped) for input that is not a JSON object, so cannot be
// any of the supported documents.
var ErrUnrecognised = errors.New("not a pulumi preview --json, pulumi stack export or terraform show -json document")

// OtherOutputError is the error for a tool's output that is not the document the rules
// read, such as a binary Terraform plan file: What names it and the command that makes
// the document. It wraps ErrUnrecognised.
type OtherOutputError struct {
	File, What string
}

func (e *OtherOutputError) Error() string { return e.File + ": " + e.What }

// Unwrap is ErrUnrecognised.
func (e *OtherOutputError) Unwrap() error { return ErrUnrecognised }

// Location points at the place a resource was declared or appears.
type Location struct {
	File string `json:"file"`
	Line int    `json:"line,omitempty"`
}

// Plan is one plan document to check (a pulumi preview or stack export, a terraform
// plan), decoded for the rules. It is the same concept as render.Plan, the typed form of
// the preview document the offline render writes; the other types once called Plan are
// alerts.PolicySet and route.Routed.
type Plan struct {
	// File names the document in messages and reports ("-" for standard input).
	File string
	// Document is the decoded JSON document in OPA's value form: the rules' input.
	Document ast.Value
	// Locations maps a resource's URN (Terraform: address) to where it was declared or
	// appears, for reports; nil when unknown. Parse fills it with the document's lines.
	Locations map[string]Location
}

// Parse decodes a JSON document. file names it in errors and is the file of the
// locations Parse records: for each URN or address, the first line of data that names it.
func Parse(data []byte, file string) (*Plan, error) {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		return nil, fmt.Errorf("%s: empty input: %w", file, ErrUnrecognised)
	}
	if what := terraformOutput(trimmed, file); what != "" {
		return nil, &OtherOutputError{File: file, What: what}
	}
	if trimmed[0] != '{' {
		return nil, fmt.Errorf("%s: the input is not a JSON object: %w", file, ErrUnrecognised)
	}
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	dec.UseNumber()
	var doc map[string]any
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("%s: invalid JSON: %v: %w", file, err, ErrUnrecognised)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s: invalid JSON: data after the document's closing brace: %w", file, ErrUnrecognised)
	}
	p, err := FromDocument(doc, file)
	if err != nil {
		return nil, err
	}
	p.Locations = Locations(data, file)
	return p, nil
}

// terraformOutput says what data is, and the command that makes the document the rules
// read from it, when it is Terraform's (or OpenTofu's) output other than a JSON plan: a
// saved plan file (a zip archive) or the log `terraform plan -json` streams (JSON lines,
// one UI message each). It is "" for anything else.
func terraformOutput(data []byte, file string) string {
	planFile := file
	if file == "stdin" || file == "-" {
		planFile = "PLANFILE"
	}
	if bytes.HasPrefix(data, []byte("PK\x03\x04")) {
		return fmt.Sprintf("this is a binary plan file (terraform plan -out), which only terraform reads: "+
			"check the JSON of it, `terraform show -json %s > plan.json` (tofu show -json for OpenTofu)", planFile)
	}
	first, _, _ := bytes.Cut(data, []byte("\n"))
	if !bytes.HasPrefix(first, []byte(`{"@`)) {
		// Not a UI message (they start with "@level"), and no second parse of a plan
		// written on one line.
		return ""
	}
	var msg struct {
		Level   *string `json:"@level"`
		Message *string `json:"@message"`
		Type    string  `json:"type"`
	}
	if json.Unmarshal(first, &msg) != nil || msg.Level == nil || msg.Message == nil {
		return ""
	}
	return "this is the log `terraform plan -json` streams (JSON lines, one UI message each, " +
		"first " + strconv.Quote(msg.Type) + "), not a plan: save the plan with `terraform plan -out=plan.tfplan`, " +
		"then check `terraform show -json plan.tfplan > plan.json`"
}

// FromDocument makes a plan of a document built in memory, such as a stack export of the
// resources a Pulumi analyzer was given: {"version": 3, "deployment": {"resources": [{"urn",
// "type", "inputs", "parent", "dependencies", "propertyDependencies"}, ...]}}. doc must be
// JSON-shaped: maps with string keys, slices, strings, numbers, booleans and nil.
func FromDocument(doc any, file string) (*Plan, error) {
	v, err := ast.InterfaceToValue(doc)
	if err != nil {
		return nil, fmt.Errorf("%s: converting the document: %w", file, err)
	}
	if _, ok := v.(ast.Object); !ok {
		return nil, fmt.Errorf("%s: the document is not a JSON object: %w", file, ErrUnrecognised)
	}
	return &Plan{File: file, Document: v}, nil
}

// Locations maps each resource URN (Terraform: address) to the first line of the JSON
// document data, in file, that names it as "urn" or "address", for reports that point into
// the file. One pass over the input.
func Locations(data []byte, file string) map[string]Location {
	lines := map[string]Location{}
	line, last := 1, 0
	for i := 0; i < len(data); {
		j := bytes.IndexByte(data[i:], '"')
		if j < 0 {
			break
		}
		start := i + j
		key := ""
		switch {
		case bytes.HasPrefix(data[start:], []byte(`"urn"`)):
			key = `"urn"`
		case bytes.HasPrefix(data[start:], []byte(`"address"`)):
			key = `"address"`
		default:
			i = skipString(data, start)
			continue
		}
		k := skipSpace(data, start+len(key))
		if k >= len(data) || data[k] != ':' {
			i = start + len(key)
			continue
		}
		k = skipSpace(data, k+1)
		if k >= len(data) || data[k] != '"' {
			i = k
			continue
		}
		end := skipString(data, k)
		var value string
		if json.Unmarshal(data[k:end], &value) == nil {
			if _, seen := lines[value]; !seen {
				line += bytes.Count(data[last:start], []byte{'\n'})
				last = start
				lines[value] = Location{File: file, Line: line}
			}
		}
		i = end
	}
	return lines
}

// skipSpace returns the offset of the first byte at or after k that is not JSON whitespace.
func skipSpace(data []byte, k int) int {
	return len(data) - len(bytes.TrimLeft(data[k:], " \t\n\r"))
}

// skipString returns the offset just past the JSON string starting at data[start] ('"').
func skipString(data []byte, start int) int {
	for k := start + 1; k < len(data); {
		j := bytes.IndexAny(data[k:], `"\`)
		if j < 0 {
			break
		}
		k += j
		if data[k] == '\\' {
			k += 2
			continue
		}
		return k + 1
	}
	return len(data)
}
