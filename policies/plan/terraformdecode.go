package plan

import (
	gojson "github.com/goccy/go-json"
	"github.com/open-policy-agent/opa/v1/ast"
)

// The fast path for `terraform show -json` plans: each element of resource_changes is
// decoded, converted to pulumi-gcp's shape and turned into its OPA value on the worker
// that cut it out, with the general path's own functions (tfResource, convert), so both
// give the same resources; only the links between resources are resolved afterwards, in
// one pass over all of them.

// tfDecoded is one element of resource_changes read by the fast path.
type tfDecoded struct {
	rc  tfResourceChange
	res Resource
}

// decode decodes one element of resource_changes and, when it plans a resource, builds
// the resource with its properties in OPA's value form. The change's values are dropped
// once converted.
func (t *tfDecoded) decode(elem []byte) bool {
	if err := gojson.Unmarshal(elem, &t.rc); err != nil {
		return false
	}
	if t.rc.Address == "" || t.rc.Type == "" {
		return false
	}
	if !planned(&t.rc) {
		return true
	}
	r, props := tfResource(&t.rc)
	v, err := ast.InterfaceToValue(props)
	if err != nil {
		return false
	}
	r.props = v
	t.res = r
	t.rc.Change = tfChange{Actions: t.rc.Change.Actions}
	return true
}

func terraformFast(top *topLevel) (*Plan, bool) {
	var formatVersion string
	if !decodeSmall(top.formatVersion, &formatVersion) || formatVersion == "" {
		return nil, false
	}
	var config struct {
		RootModule tfModuleConfig `json:"root_module"`
	}
	if top.configuration != nil && !decodeSmall(top.configuration, &config) {
		return nil, false
	}
	p := &Plan{Format: FormatTerraform, Complete: true}
	var kept []*tfResourceChange
	for i := range top.changes {
		if rc := &top.changes[i].rc; planned(rc) {
			kept = append(kept, rc)
			p.Resources = append(p.Resources, top.changes[i].res)
		}
	}
	linkTerraform(p.Resources, kept, config.RootModule)
	eachShard(len(p.Resources), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			cacheValue(nil, &p.Resources[i])
		}
	})
	return p, true
}
