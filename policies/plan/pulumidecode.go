package plan

import (
	"encoding/json"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
)

// This file is the fast path of Parse for Pulumi documents (`pulumi preview --json`, the
// offline render, `pulumi stack export`): the top level is walked once, the big array
// (steps or deployment.resources) is cut into its elements, and the elements are decoded
// on every processor at once, each straight to the resource with its properties as an OPA
// value. Whatever this path does not handle exactly like the general path (a document
// mixing formats, a field of an unexpected type, a key differing only in case from a
// known one, a duplicate key, malformed JSON, a step without op or urn, …) makes it give
// up, and Parse decodes the document the general way, which reports the error it always
// reported.

// topLevelField, stepField and stateField number the keys the general path decodes at the
// top of a document (document's fields), in a preview step (previewStep) and in a resource
// state (pulumiState): the index of key, -1 for another key, or -2 for a key differing
// from a known one only in case (encoding/json would match it: the fast path leaves such
// documents to the general one).
func topLevelField(key []byte) int {
	return known(key, "steps", "changeSummary", "version", "deployment", "format_version", "resource_changes", "planned_values", "configuration")
}

func stepField(key []byte) int { return known(key, "op", "urn", "newState", "oldState") }

func stateField(key []byte) int {
	return known(key, "urn", "type", "id", "custom", "delete", "inputs", "dependencies", "propertyDependencies")
}

func deploymentField(key []byte) int { return known(key, "resources") }

// The fields' numbers.
const (
	topSteps = iota
	topChangeSummary
	topVersion
	topDeployment
)

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

// known returns the index of key in names, -1 if absent, -2 if it folds to one of them.
func known(key []byte, names ...string) int {
	for i, n := range names {
		if string(key) == n {
			return i
		}
	}
	for _, n := range names {
		if strings.EqualFold(string(key), n) {
			return -2
		}
	}
	return -1
}

// fields walks the object at the current position, calling fn for each key that field
// numbers with the decoder at its value; fn must consume the value. Other keys are
// skipped (checked), known keys may appear once.
func (d *valueDecoder) fields(field func(key []byte) int, fn func(f int) bool) bool {
	d.skipSpace()
	var seen uint64
	return d.objectEntries(func(key []byte) bool {
		f := field(key)
		switch {
		case f == -2:
			return false
		case f < 0:
			return d.skip()
		case seen&(1<<f) != 0:
			return false
		}
		seen |= 1 << f
		d.skipSpace()
		return fn(f)
	})
}

// isNull consumes a null at the current position.
func (d *valueDecoder) isNull() bool {
	if _, ok := d.literal("null", nil); ok {
		return true
	}
	return false
}

// optString decodes a string or null (the empty string).
func (d *valueDecoder) optString() (string, bool) {
	if d.isNull() {
		return "", true
	}
	if d.pos >= len(d.data) || d.data[d.pos] != '"' {
		return "", false
	}
	return d.goString()
}

// optBool decodes true, false or null (set == false).
func (d *valueDecoder) optBool() (v, set, ok bool) {
	switch {
	case d.isNull():
		return false, false, true
	case d.pos < len(d.data) && d.data[d.pos] == 't':
		_, ok = d.literal("true", nil)
		return true, true, ok
	default:
		_, ok = d.literal("false", nil)
		return false, true, ok
	}
}

// stringList decodes an array of strings or null.
func (d *valueDecoder) stringList() ([]string, bool) {
	if d.isNull() {
		return nil, true
	}
	if d.pos >= len(d.data) || d.data[d.pos] != '[' {
		return nil, false
	}
	d.pos++
	list := []string{}
	d.skipSpace()
	if d.pos < len(d.data) && d.data[d.pos] == ']' {
		d.pos++
		return list, true
	}
	for {
		d.skipSpace()
		if d.pos >= len(d.data) || d.data[d.pos] != '"' {
			return nil, false
		}
		s, ok := d.goString()
		if !ok {
			return nil, false
		}
		list = append(list, s)
		d.skipSpace()
		if d.pos >= len(d.data) {
			return nil, false
		}
		c := d.data[d.pos]
		d.pos++
		if c == ']' {
			return list, true
		}
		if c != ',' {
			return nil, false
		}
	}
}

// stringListMap decodes an object of string arrays, or null.
func (d *valueDecoder) stringListMap() (map[string][]string, bool) {
	if d.isNull() {
		return nil, true
	}
	m := map[string][]string{}
	var key string
	ok := d.objectEntries(func(k []byte) bool {
		key = string(k)
		if _, dup := m[key]; dup {
			return false
		}
		d.skipSpace()
		l, ok := d.stringList()
		if !ok || l == nil {
			return false
		}
		m[key] = l
		return true
	})
	return m, ok
}

// objectEntries walks an object with arbitrary keys; fn consumes each value.
func (d *valueDecoder) objectEntries(fn func(key []byte) bool) bool {
	if d.pos >= len(d.data) || d.data[d.pos] != '{' {
		return false
	}
	d.pos++
	d.skipSpace()
	if d.pos < len(d.data) && d.data[d.pos] == '}' {
		d.pos++
		return true
	}
	for {
		d.skipSpace()
		if d.pos >= len(d.data) || d.data[d.pos] != '"' {
			return false
		}
		key, _, ok := d.stringBytes()
		if !ok {
			return false
		}
		d.skipSpace()
		if d.pos >= len(d.data) || d.data[d.pos] != ':' {
			return false
		}
		d.pos++
		if !fn(key) {
			return false
		}
		d.skipSpace()
		if d.pos >= len(d.data) {
			return false
		}
		c := d.data[d.pos]
		d.pos++
		if c == '}' {
			return true
		}
		if c != ',' {
			return false
		}
	}
}

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

// step decodes one element of "steps".
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
	if !ok || !d.atEnd() || out.op == "" || out.urn == "" {
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

// topLevel holds what the fast path reads from the top of a Pulumi document: the steps or
// the resources, decoded while the top level is read.
type topLevel struct {
	steps         []decodedStep
	resources     []exportedResource
	hasSteps      bool
	hasDeployment bool
	changeSummary []byte
	version       []byte
	other         bool // a key of another format
}

// exportedResource is one element of deployment.resources read by the fast path; keep
// says whether it yields a resource.
type exportedResource struct {
	keep bool
	res  Resource
}

// readTopLevel walks the top-level object, decoding the big arrays on every processor.
func readTopLevel(data []byte) (topLevel, bool) {
	var top topLevel
	d := newValueDecoder()
	d.reset(data)
	ok := d.fields(topLevelField, func(f int) bool {
		var ok bool
		start := d.pos
		switch f {
		case topSteps:
			top.hasSteps = true
			top.steps, d.pos, ok = decodeArray(d.data, d.pos, func(d *valueDecoder, elem []byte, out *decodedStep) bool {
				d.resetElement(elem)
				return d.step(out)
			})
		case topChangeSummary:
			ok = d.skip()
			top.changeSummary = d.data[start:d.pos]
		case topVersion:
			ok = d.skip()
			top.version = d.data[start:d.pos]
		case topDeployment:
			top.hasDeployment = true
			ok = d.fields(deploymentField, func(int) bool {
				var ok bool
				top.resources, d.pos, ok = decodeArray(d.data, d.pos, func(d *valueDecoder, elem []byte, out *exportedResource) bool {
					d.resetElement(elem)
					return d.exported(out)
				})
				return ok
			})
		default:
			top.other = true
			ok = d.skip()
		}
		return ok
	})
	return top, ok && d.atEnd()
}

// exported decodes one element of deployment.resources.
func (d *valueDecoder) exported(out *exportedResource) bool {
	var s decodedState
	if !d.state(&s, true) || !d.atEnd() || s.urn == "" || s.typ == "" {
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

// parsePulumiFast is the fast path for preview and stack-export documents; ok is false
// when the document must take the general path.
func parsePulumiFast(data []byte) (*Plan, bool) {
	top, ok := readTopLevel(data)
	if !ok || top.other || top.hasSteps == top.hasDeployment {
		return nil, false
	}
	if top.hasSteps {
		if top.version != nil {
			return nil, false
		}
		return previewFast(&top)
	}
	if top.changeSummary != nil {
		return nil, false
	}
	return exportFast(&top)
}

func previewFast(top *topLevel) (*Plan, bool) {
	var summary map[string]int
	if top.changeSummary != nil {
		if err := json.Unmarshal(top.changeSummary, &summary); err != nil {
			return nil, false
		}
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
	if err := json.Unmarshal(top.version, &version); err != nil || version == nil {
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
