// Package render runs a stack's Pulumi program offline, with pulumi.WithMocks
// and the stack's config file, and writes the plan in the shape of
// `pulumi preview --json`. No Pulumi CLI, plugin or cloud credentials are
// needed, and two runs over the same config are byte-identical.
package render

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/plugin"

	"github.com/eventpipe/eventpipe/internal/srcpos"
)

// Unknown is the value `pulumi preview --json` shows for values that are not
// known until the resource exists: Pulumi's own unknown-value sentinel.
const Unknown = plugin.UnknownStringValue

// Secret is how plans show secret values.
const Secret = "[secret]"

// Plan is the document `pulumi preview --json` prints, typed. policies/plan.Plan is the
// same plan document (or another the rules read) decoded for the rules.
type Plan struct {
	// Config is the stack config as the program saw it (secrets hidden).
	Config map[string]string `json:"config"`
	// Steps are the resource operations, parents and dependencies first.
	Steps []Step `json:"steps"`
	// Diagnostics are messages of the run (always empty on success).
	Diagnostics []any `json:"diagnostics"`
	// ChangeSummary counts steps by operation.
	ChangeSummary map[string]int `json:"changeSummary"`
}

// Step is one planned resource operation.
type Step struct {
	// Op is the operation; an offline plan starts from nothing, so "create".
	Op string `json:"op"`
	// URN identifies the resource.
	URN string `json:"urn"`
	// Provider is the provider reference of a custom resource.
	Provider string `json:"provider,omitempty"`
	// NewState is the resource as it will be.
	NewState State `json:"newState"`
}

// State is a resource's planned state.
type State struct {
	// URN identifies the resource.
	URN string `json:"urn"`
	// Type is the resource type token, e.g. gcp:pubsub/subscription:Subscription.
	Type string `json:"type"`
	// Custom is true for provider resources, false for components.
	Custom bool `json:"custom"`
	// Inputs are the resource's input properties.
	Inputs map[string]any `json:"inputs"`
	// Parent is the URN of the parent resource.
	Parent string `json:"parent,omitempty"`
	// Protect is true for a resource Pulumi refuses to delete or replace
	// until it is unprotected.
	Protect bool `json:"protect,omitempty"`
	// Dependencies are URNs the resource depends on.
	Dependencies []string `json:"dependencies"`
	// PropertyDependencies maps input names to the URNs their values come from.
	PropertyDependencies map[string][]string `json:"propertyDependencies"`
	// SourcePosition is where the program declared the resource, in the engine's form
	// (project:///PATH#LINE, internal/srcpos); set by render/program for a team's
	// program, empty for eventpipe's stacks, which are declared in their config file.
	SourcePosition string `json:"sourcePosition,omitempty"`
	// Frames are the Go call stack of the registration, innermost first (not written).
	Frames []srcpos.Frame `json:"-"`
}

// StepsOfType returns the steps whose resource has type token typ.
func (p *Plan) StepsOfType(typ string) []Step {
	var out []Step
	for _, s := range p.Steps {
		if s.NewState.Type == typ {
			out = append(out, s)
		}
	}
	return out
}

// Step returns the step of urn.
func (p *Plan) Step(urn string) (Step, bool) {
	for _, s := range p.Steps {
		if s.URN == urn {
			return s, true
		}
	}
	return Step{}, false
}

// JSON is the plan as `eventpipe render` prints it and `eventpipe check` reads it: indented,
// without HTML escaping, ending in a newline.
func (p *Plan) JSON() ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(p); err != nil {
		return nil, fmt.Errorf("encode the plan: %w", err)
	}
	return buf.Bytes(), nil
}
