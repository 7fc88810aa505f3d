package plan

import (
	"fmt"
)

// pulumiState is a resource state as both preview steps and stack exports print it.
type pulumiState struct {
	URN                  string              `json:"urn"`
	Type                 string              `json:"type"`
	ID                   string              `json:"id"`
	Custom               *bool               `json:"custom"`
	Delete               bool                `json:"delete"`
	Inputs               map[string]any      `json:"inputs"`
	Dependencies         []string            `json:"dependencies"`
	PropertyDependencies map[string][]string `json:"propertyDependencies"`
}

type previewStep struct {
	Op       string       `json:"op"`
	URN      string       `json:"urn"`
	NewState *pulumiState `json:"newState"`
	OldState *pulumiState `json:"oldState"`
}

type previewDoc struct {
	Steps         []previewStep  `json:"steps"`
	ChangeSummary map[string]int `json:"changeSummary"`
}

// removing reports whether a preview operation leaves the resource gone.
func removing(op string) bool {
	switch op {
	case "delete", "delete-replaced", "discard", "discard-replaced", "read-discard", "remove-pending-replace":
		return true
	}
	return false
}

func fromPreview(doc *previewDoc) (*Plan, []map[string]any, error) {
	p := &Plan{Format: FormatPreview, Complete: true}
	var props []map[string]any
	sames := 0
	index := map[string]int{}
	for i, st := range doc.Steps {
		if st.Op == "" || st.URN == "" {
			return nil, nil, fmt.Errorf("steps[%d]: a preview step needs \"op\" and \"urn\" (is this pulumi preview --json output?): %w", i, ErrUnrecognised)
		}
		if st.Op == "same" {
			sames++
		}
		if removing(st.Op) {
			continue
		}
		s := st.NewState
		if s == nil {
			s = st.OldState
		}
		if s == nil || !isCustom(s) {
			continue
		}
		r, rp := fromPulumiState(s, st.URN)
		r.Op = st.Op
		if j, ok := index[r.URN]; ok { // replace steps repeat the URN: keep the last state
			p.Resources[j], props[j] = r, rp
			continue
		}
		index[r.URN] = len(p.Resources)
		p.Resources = append(p.Resources, r)
		props = append(props, rp)
	}
	if sames == 0 && doc.ChangeSummary["same"] > 0 {
		p.Complete = false
	}
	return p, props, nil
}

type exportDoc struct {
	Version    *int              `json:"version"`
	Deployment *exportDeployment `json:"deployment"`
}

type exportDeployment struct {
	Resources []pulumiState `json:"resources"`
}

func fromExport(doc *exportDoc) (*Plan, []map[string]any, error) {
	if doc.Version == nil {
		return nil, nil, fmt.Errorf("a stack export has a \"version\" (3): %w", ErrUnrecognised)
	}
	p := &Plan{Format: FormatExport, Complete: true}
	var props []map[string]any
	for i := range doc.Deployment.Resources {
		s := &doc.Deployment.Resources[i]
		if s.URN == "" || s.Type == "" {
			return nil, nil, fmt.Errorf("deployment.resources[%d]: needs \"urn\" and \"type\": %w", i, ErrUnrecognised)
		}
		if s.Delete || !isCustom(s) {
			continue
		}
		r, rp := fromPulumiState(s, s.URN)
		p.Resources = append(p.Resources, r)
		props = append(props, rp)
	}
	return p, props, nil
}

// isCustom is false for component resources and the stack itself: rules only see
// cloud resources. Providers are custom but never match a rule's type.
func isCustom(s *pulumiState) bool {
	return s.Custom == nil || *s.Custom
}

// fromPulumiState returns the resource of a state and its properties.
func fromPulumiState(s *pulumiState, urn string) (Resource, map[string]any) {
	if s.URN != "" {
		urn = s.URN
	}
	props, _ := normaliseSecrets(s.Inputs).(map[string]any)
	if props == nil {
		props = map[string]any{}
	}
	return Resource{
		URN:                  urn,
		Type:                 s.Type,
		Name:                 nameFromURN(urn),
		ID:                   s.ID,
		Dependencies:         s.Dependencies,
		PropertyDependencies: s.PropertyDependencies,
	}, props
}

// secretSig is the signature key Pulumi uses to mark a secret value in state.
const secretSig = "4dabf18193072939515e22adb298388d"

// normaliseSecrets replaces Pulumi's serialised secrets ({sig: ..., ciphertext|value: ...})
// with Secret, recursively.
func normaliseSecrets(v any) any {
	switch t := v.(type) {
	case map[string]any:
		if _, ok := t[secretSig]; ok {
			return Secret
		}
		for k, e := range t {
			t[k] = normaliseSecrets(e)
		}
		return t
	case []any:
		for i, e := range t {
			t[i] = normaliseSecrets(e)
		}
		return t
	default:
		return v
	}
}
