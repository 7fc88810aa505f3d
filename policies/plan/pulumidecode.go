package plan

import (
	"github.com/open-policy-agent/opa/v1/ast"
)

// The fast path for Pulumi documents (preview steps, stack-export resources): each
// element is decoded into its resource with fromPreview's and fromExport's rules, its
// inputs straight into OPA values with Pulumi's serialised secrets replaced by Secret.

// stepField and stateField number the keys the general path decodes in a preview step
// (previewStep) and in a resource state (pulumiState); see known.
func stepField(key []byte) int { return known(key, "op", "urn", "newState", "oldState") }

func stateField(key []byte) int {
	return known(key, "urn", "type", "id", "custom", "delete", "inputs", "dependencies", "propertyDependencies")
}

const (
	stepOp = iota
	stepURN
	stepNewState
	stepOldState
)

const (
	stateURN = iota
	stateType
	stateID
	stateCustom
	stateDelete
	stateInputs
	stateDependencies
	statePropertyDependencies
)

// decodedState is a pulumiState read by the fast path. inputs is the decoded inputs
// object (nil when absent or null); when the inputs were only checked, raw holds them.
type decodedState struct {
	urn, typ, id string
	notCustom    bool
	deleted      bool
	inputs       *ast.Term
	raw          []byte
	deps         []string
	pdeps        map[string][]string
}

// state decodes a pulumiState; with decode false the inputs are checked, kept raw and
// decoded only if this state is the one used.
func (d *valueDecoder) state(s *decodedState, decode bool) bool {
	return d.fields(stateField, func(f int) bool {
		var ok bool
		switch f {
		case stateURN:
			s.urn, ok = d.optString()
		case stateType:
			s.typ, ok = d.optString()
		case stateID:
			s.id, ok = d.optString()
		case stateCustom:
			var v, set bool
			v, set, ok = d.optBool()
			s.notCustom = set && !v
		case stateDelete:
			s.deleted, _, ok = d.optBool()
		case stateInputs:
			if d.isNull() {
				return true
			}
			if d.pos >= len(d.data) || d.data[d.pos] != '{' {
				return false
			}
			if decode {
				s.inputs, ok = d.value(true)
			} else {
				start := d.pos
				ok = d.skip()
				s.raw = d.data[start:d.pos]
			}
		case stateDependencies:
			s.deps, ok = d.stringList()
		case statePropertyDependencies:
			s.pdeps, ok = d.stringListMap()
		}
		return ok
	})
}

// properties returns the state's inputs as the resource's properties: an object, empty
// when there are none or the inputs are a secret as a whole.
func (d *valueDecoder) properties(s *decodedState) (ast.Value, bool) {
	if s.inputs == nil && s.raw != nil {
		saved, text, pos := d.data, d.text, d.pos
		d.reset(s.raw)
		t, ok := d.value(true)
		d.data, d.text, d.pos = saved, text, pos
		if !ok {
			return nil, false
		}
		s.inputs = t
	}
	if s.inputs != nil {
		if obj, ok := s.inputs.Value.(ast.Object); ok {
			return obj, true
		}
	}
	return ast.NewObject(), true
}

// resource builds the Resource of a state (fromPulumiState's rule).
func (d *valueDecoder) resource(s *decodedState, urn string) (Resource, bool) {
	if s.urn != "" {
		urn = s.urn
	}
	props, ok := d.properties(s)
	if !ok {
		return Resource{}, false
	}
	r := Resource{
		URN:                  urn,
		Type:                 s.typ,
		Name:                 nameFromURN(urn),
		ID:                   s.id,
		Dependencies:         s.deps,
		PropertyDependencies: s.pdeps,
		props:                props,
	}
	cacheValue(d, &r)
	return r, true
}

// decodedStep is one preview step read by the fast path; keep says whether it yields a
// resource.
type decodedStep struct {
	op, urn string
	keep    bool
	res     Resource
}

// step decodes the element of "steps" at the decoder's position.
func (d *valueDecoder) step(out *decodedStep) bool {
	var newState, oldState decodedState
	hasNew, hasOld := false, false
	ok := d.fields(stepField, func(f int) bool {
		var ok bool
		switch f {
		case stepOp:
			out.op, ok = d.optString()
		case stepURN:
			out.urn, ok = d.optString()
		case stepNewState:
			if d.isNull() {
				return true
			}
			hasNew = true
			ok = d.state(&newState, true)
		case stepOldState:
			if d.isNull() {
				return true
			}
			hasOld = true
			ok = d.state(&oldState, false)
		}
		return ok
	})
	if !ok || out.op == "" || out.urn == "" {
		return false
	}
	if removing(out.op) {
		return true
	}
	s := &newState
	if !hasNew {
		if !hasOld {
			return true
		}
		s = &oldState
	}
	if s.notCustom {
		return true
	}
	out.res, ok = d.resource(s, out.urn)
	out.res.Op = out.op
	out.keep = ok
	return ok
}

// exportedResource is one element of deployment.resources read by the fast path; keep
// says whether it yields a resource.
type exportedResource struct {
	keep bool
	res  Resource
}

// exported decodes the element of deployment.resources at the decoder's position.
func (d *valueDecoder) exported(out *exportedResource) bool {
	var s decodedState
	if !d.state(&s, true) || s.urn == "" || s.typ == "" {
		return false
	}
	if s.deleted || s.notCustom {
		return true
	}
	var ok bool
	out.res, ok = d.resource(&s, s.urn)
	out.keep = ok
	return ok
}

func previewFast(top *topLevel) (*Plan, bool) {
	var summary map[string]int
	if top.changeSummary != nil && !decodeSmall(top.changeSummary, &summary) {
		return nil, false
	}
	steps := top.steps
	p := &Plan{Format: FormatPreview, Complete: true}
	sames, kept := 0, 0
	for i := range steps {
		if steps[i].op == "same" {
			sames++
		}
		if steps[i].keep {
			kept++
		}
	}
	p.Resources = make([]Resource, 0, kept)
	index := make(map[string]int, kept)
	for i := range steps {
		st := &steps[i]
		if !st.keep {
			continue
		}
		if j, ok := index[st.res.URN]; ok { // replace steps repeat the URN: keep the last state
			p.Resources[j] = st.res
			continue
		}
		index[st.res.URN] = len(p.Resources)
		p.Resources = append(p.Resources, st.res)
	}
	if sames == 0 && summary["same"] > 0 {
		p.Complete = false
	}
	return p, true
}

func exportFast(top *topLevel) (*Plan, bool) {
	var version *int
	if !decodeSmall(top.version, &version) || version == nil {
		return nil, false
	}
	p := &Plan{Format: FormatExport, Complete: true}
	for i := range top.resources {
		if top.resources[i].keep {
			p.Resources = append(p.Resources, top.resources[i].res)
		}
	}
	return p, true
}
