// Package plan reads the documents eventpipe checks — `pulumi preview --json` (with or
// without --show-sames, and the offline render, which has its shape), `pulumi stack export`
// (also the shape eventpipe's Pulumi analyzer builds from AnalyzeStack requests) and
// `terraform show -json PLANFILE` — as JSON, in OPA's value form. It does not interpret
// them, with one exception: a Terraform plan becomes its model (policies/tfmodel), the
// values the Rego model (policies/model*.rego, which conftest and opa eval read) computes
// from the plan, built in Go because in Rego the model of a plan costs several times the
// rules (docs/benchmarks.md). The parity tests hold the two models equal, so eventpipe
// check, conftest and opa eval judge every document alike.
package plan

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/eventpipe/eventpipe/internal/srcpos"
	"github.com/eventpipe/eventpipe/policies/tfmodel"
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
	// Declared maps a Pulumi resource's URN to the position, in the engine's form
	// (project:///PATH#LINE, internal/srcpos), of the program's call that declared it,
	// as the document records it (Declared); nil when it records none. Paths are
	// relative to the program's project root, which the document does not name.
	Declared map[string]string
}

// Parse decodes a JSON document (a Terraform plan into its model: see the package
// documentation). file names it in errors and is the file of the
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
	var input any = doc
	if tfmodel.IsPlan(doc) {
		input = map[string]any{tfmodel.Key: tfmodel.Model(doc)}
	}
	p, err := FromDocument(input, file)
	if err != nil {
		return nil, err
	}
	p.Locations = Locations(data, file)
	p.Declared = Declared(doc)
	return p, nil
}

// Declared maps each resource of a Pulumi document (a preview's steps, a stack export's
// resources) to where the program declared it: the innermost frame of its stackTrace
// inside the project, else its sourcePosition when inside the project (the engine's
// positions are project-relative; the SDK's frame for a resource a library registered
// is the library's, outside), else its parent's. Resources with none are left out; nil
// when none has one (a Terraform plan, an offline render of a stack).
func Declared(doc map[string]any) map[string]string {
	type res struct{ urn, parent, pos string }
	var all []res
	add := func(v any) {
		st, _ := v.(map[string]any)
		urn, _ := st["urn"].(string)
		if urn == "" {
			return
		}
		r := res{urn: urn}
		r.parent, _ = st["parent"].(string)
		frames, _ := st["stackTrace"].([]any)
		for _, f := range frames {
			fm, _ := f.(map[string]any)
			if pos, _ := fm["sourcePosition"].(string); inProject(pos) {
				r.pos = pos
				break
			}
		}
		if pos, _ := st["sourcePosition"].(string); r.pos == "" && inProject(pos) {
			r.pos = pos
		}
		all = append(all, r)
	}
	steps, _ := doc["steps"].([]any)
	for _, s := range steps {
		sm, _ := s.(map[string]any)
		if sm["newState"] != nil {
			add(sm["newState"])
		} else {
			add(sm["oldState"])
		}
	}
	if d, ok := doc["deployment"].(map[string]any); ok {
		resources, _ := d["resources"].([]any)
		for _, r := range resources {
			add(r)
		}
	}
	own := map[string]res{}
	for _, r := range all {
		own[r.urn] = r
	}
	var out map[string]string
	for _, r := range all {
		// The nearest ancestor with a position; parents form a tree, but a document
		// is input: stop after as many steps as there are resources.
		at := r
		for i := 0; at.pos == "" && at.parent != "" && i < len(all); i++ {
			at = own[at.parent]
		}
		if at.pos != "" {
			if out == nil {
				out = map[string]string{}
			}
			out[r.urn] = at.pos
		}
	}
	return out
}

// inProject reports whether pos is a position in the engine's form inside the project.
func inProject(pos string) bool {
	rel, _, ok := srcpos.Parse(pos)
	return ok && srcpos.InProject(rel)
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
