// Package plan reads the infrastructure plans eventpipe checks — `pulumi preview --json`
// (with or without --show-sames), `pulumi stack export`, the offline render (which has the
// preview shape) and `terraform show -json` — and normalises them onto one model: the
// resource list Pulumi's OPA stack policies see (type, urn, name, properties with Pulumi's
// camelCase input names, dependencies, propertyDependencies).
//
// Parse produces that model in OPA's value form, the form the rules are evaluated on: each
// resource's properties are an ast.Object, and each resource keeps its whole rule input
// (Resource.Value) built while it was decoded, so the engine only gathers them. A
// document of a usual shape takes the fast path (fastpath.go): the big array (steps,
// deployment.resources, resource_changes) is decoded on every processor at once, straight
// from JSON text to OPA values (valuedecoder.go), with no map[string]any step. Anything
// the fast path cannot read exactly as the general path does makes it give up, and the
// general path (goccy/go-json into Go values, then ast.InterfaceToValue) reads the
// document and reports its errors; tests hold both paths to the same results.
package plan

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	gojson "github.com/goccy/go-json"
	"github.com/open-policy-agent/opa/v1/ast"
)

// Unknown is the value `pulumi preview --json` prints for a value only known after apply.
// Terraform's unknown values are normalised to it as well.
const Unknown = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"

// Secret is the value `pulumi preview --json` prints for a secret. Secrets from stack
// exports and sensitive Terraform values are normalised to it.
const Secret = "[secret]"

// Format names the kind of document a plan was read from.
type Format string

// The formats Parse recognises.
const (
	FormatPreview   Format = "pulumi-preview"
	FormatExport    Format = "pulumi-stack-export"
	FormatTerraform Format = "terraform-plan"
)

// ErrUnrecognised is returned (wrapped) for input that is none of the supported formats.
var ErrUnrecognised = errors.New("not a pulumi preview --json, pulumi stack export or terraform show -json document")

// Location points at the place a resource was declared or appears.
type Location struct {
	File string `json:"file"`
	Line int    `json:"line,omitempty"`
}

// Resource is one resource in the normalised model. Its properties are held in OPA's
// value form, the form the rules read, built once while parsing (see Properties).
type Resource struct {
	URN                  string
	Type                 string
	Name                 string
	ID                   string
	Dependencies         []string
	PropertyDependencies map[string][]string
	// Op is the planned operation (create, update, same, …), empty for stack exports.
	Op string
	// Location, when set, is where the resource was declared (rendered stacks).
	Location *Location

	// props is the properties object (Pulumi's camelCase input names).
	props ast.Value
	// value caches Value, built by Parse from the fields recorded in built.
	value ast.Value
	built builtFrom
}

// Plan is a normalised plan.
type Plan struct {
	Format Format
	// Complete is false when unchanged resources were left out (pulumi preview --json
	// without --show-sames): verdicts that rest on a resource being absent are then unsafe.
	Complete  bool
	Resources []Resource
	// File is the name the plan was read from ("-" for stdin).
	File string

	raw []byte
}

// Parse detects the format of data and normalises it. file names the source in errors
// and locations.
func Parse(data []byte, file string) (*Plan, error) {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		return nil, fmt.Errorf("%s: empty input: %w", file, ErrUnrecognised)
	}
	if trimmed[0] != '{' {
		return nil, fmt.Errorf("%s: input is not a JSON object: %w", file, ErrUnrecognised)
	}
	// The fast path handles well-formed documents of the common shapes; it gives up on
	// anything else, which the general path then reads (and reports).
	p, ok := parseFast(trimmed)
	if !ok {
		var err error
		if p, err = parseGeneral(trimmed, file); err != nil {
			return nil, err
		}
	}
	p.File = file
	p.raw = data
	return p, nil
}

// parseGeneral is Parse for any document, through Go values: one decoding pass of every
// format's top-level fields at once; the format is the one whose fields are present.
func parseGeneral(trimmed []byte, file string) (*Plan, error) {
	// goccy/go-json (already linked in through OPA) decodes a large plan in about half the
	// time encoding/json takes; when it fails, encoding/json decodes again, so what it
	// accepts and the error it reports are encoding/json's.
	var doc document
	if err := gojson.Unmarshal(trimmed, &doc); err != nil {
		doc = document{}
		if err := json.Unmarshal(trimmed, &doc); err != nil {
			return nil, fmt.Errorf("%s: invalid JSON or unexpected field types: %v: %w", file, err, ErrUnrecognised)
		}
	}
	var (
		p     *Plan
		props []map[string]any
		err   error
	)
	switch {
	case doc.Steps != nil:
		p, props, err = fromPreview(&doc.previewDoc)
	case doc.Deployment != nil:
		p, props, err = fromExport(&doc.exportDoc)
	case doc.FormatVersion != "" && (doc.ResourceChanges != nil || doc.PlannedValues != nil):
		p, props, err = fromTerraform(&doc.tfPlan)
	default:
		return nil, fmt.Errorf("%s: top-level keys %v match no known format (expected \"steps\", \"deployment\" or \"format_version\"+\"resource_changes\"): %w", file, topLevelKeys(trimmed), ErrUnrecognised)
	}
	if err == nil {
		err = setProperties(p.Resources, props)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return p, nil
}

// document holds the top-level fields of every supported format.
type document struct {
	previewDoc
	exportDoc
	tfPlan
}

func topLevelKeys(data []byte) []string {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil {
		return nil
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Lines maps each resource URN (Terraform: address) to the first line of the input
// document that names it as "urn" or "address", for reports that point into the file.
// One pass over the input.
func (p *Plan) Lines() map[string]int {
	return Lines(p.raw, len(p.Resources))
}

// Lines is Plan.Lines on the raw document data, before (or while) it is parsed; n sizes
// the map (the expected number of resources, 0 if unknown).
func Lines(data []byte, n int) map[string]int {
	lines := make(map[string]int, n)
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
		k := start + len(key)
		for k < len(data) && (data[k] == ' ' || data[k] == '\t' || data[k] == '\n' || data[k] == '\r') {
			k++
		}
		if k >= len(data) || data[k] != ':' {
			i = start + len(key)
			continue
		}
		k++
		for k < len(data) && (data[k] == ' ' || data[k] == '\t' || data[k] == '\n' || data[k] == '\r') {
			k++
		}
		if k >= len(data) || data[k] != '"' {
			i = k
			continue
		}
		end := skipString(data, k)
		if end-k >= 2 && data[end-1] == '"' { // else unterminated
			raw := data[k+1 : end-1]
			var value string
			ok := true
			if bytes.IndexByte(raw, '\\') >= 0 {
				ok = json.Unmarshal(data[k:end], &value) == nil
			} else if _, seen := lines[string(raw)]; seen {
				ok = false // the lookup allocates nothing; most URNs are seen again
			} else {
				value = string(raw)
			}
			if _, seen := lines[value]; ok && !seen {
				line += bytes.Count(data[last:start], []byte{'\n'})
				last = start
				lines[value] = line
			}
		}
		i = end
	}
	return lines
}

// skipString returns the offset just past the JSON string starting at data[start] ('"').
func skipString(data []byte, start int) int {
	for k := start + 1; k < len(data); k++ {
		for k+8 <= len(data) && quoteFree8(data, k) {
			k += 8
		}
		if k >= len(data) {
			break
		}
		switch data[k] {
		case '\\':
			k++
		case '"':
			return k + 1
		}
	}
	return len(data)
}

// nameFromURN is the last "::"-separated part of a Pulumi URN.
func nameFromURN(urn string) string {
	if i := strings.LastIndex(urn, "::"); i >= 0 {
		return urn[i+2:]
	}
	return urn
}
