package plan

import (
	"encoding/json"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
)

// The fast path for `terraform show -json` plans: each element of resource_changes is
// decoded and converted to pulumi-gcp's shape straight in OPA's value form on the worker
// that cut it out (convertValue is convert on OPA values; the tests hold both to the same
// results); only the links between resources are resolved afterwards, in one pass over
// all of them, by the general path's own linkTerraform.

// tfDecoded is one element of resource_changes read by the fast path.
type tfDecoded struct {
	rc  tfResourceChange
	res Resource
}

// resourceChangeField and changeField number the keys of tfResourceChange and tfChange;
// see known.
func resourceChangeField(key []byte) int {
	return known(key, "address", "module_address", "mode", "type", "index", "change")
}

func changeField(key []byte) int {
	return known(key, "actions", "after", "after_unknown", "after_sensitive")
}

const (
	rcAddress = iota
	rcModuleAddress
	rcMode
	rcType
	rcIndex
	rcChange
)

// decode decodes the element of resource_changes at the decoder's position and, when it plans a resource, builds
// the resource with its properties in OPA's value form.
func (t *tfDecoded) decode(d *valueDecoder) bool {
	rc := &t.rc
	var values [3]*ast.Term // after, after_unknown, after_sensitive
	ok := d.fields(resourceChangeField, func(f int) bool {
		var ok bool
		switch f {
		case rcAddress:
			rc.Address, ok = d.optString()
		case rcModuleAddress:
			rc.ModuleAddress, ok = d.optString()
		case rcMode:
			rc.Mode, ok = d.optString()
		case rcType:
			rc.Type, ok = d.optString()
		case rcIndex: // compared as the general path decodes it
			start := d.pos
			ok = d.skip() && json.Unmarshal(d.data[start:d.pos], &rc.Index) == nil
		case rcChange:
			if d.isNull() {
				return true
			}
			ok = d.fields(changeField, func(f int) bool {
				if f == 0 {
					var ok bool
					rc.Change.Actions, ok = d.stringList()
					return ok
				}
				var ok bool
				values[f-1], ok = d.value(false)
				return ok
			})
		}
		return ok
	})
	if !ok || rc.Address == "" || rc.Type == "" {
		return false
	}
	if !planned(rc) {
		return true
	}
	props, id, ok := d.convertValue(values[0], values[1], values[2], "")
	if !ok {
		return false
	}
	obj, isObj := props.Value.(ast.Object)
	if !isObj {
		obj = ast.NewObject()
	}
	t.res = Resource{URN: rc.Address, Type: pulumiType(rc.Type), Name: rc.Address, Op: strings.Join(rc.Change.Actions, "+"), ID: id, props: obj}
	return true
}

// convertValue is convert on OPA values: Terraform's value v with its after_unknown and
// after_sensitive twins (nil when absent) in pulumi-gcp's shape. At the top (path ""),
// the "id" attribute is taken out of the object and returned when it is a known string
// (tfResource's rule). ok is false for an object whose keys collide once renamed.
func (d *valueDecoder) convertValue(v, unknown, sensitive *ast.Term, path string) (out *ast.Term, id string, ok bool) {
	if unknown != nil && unknown.Value.Compare(ast.InternedBooleanTrue.Value) == 0 {
		return d.term(ast.String(Unknown)), "", true
	}
	if sensitive != nil && sensitive.Value.Compare(ast.InternedBooleanTrue.Value) == 0 {
		return d.term(ast.String(Secret)), "", true
	}
	if v == nil {
		return ast.InternedNullTerm, "", true
	}
	switch t := v.Value.(type) {
	case ast.Object:
		um, _ := valueOf(unknown).(ast.Object)
		sm, _ := valueOf(sensitive).(ast.Object)
		base := len(d.items)
		defer func() { d.items = d.items[:base] }()
		add := func(k *ast.Term) bool {
			nk := d.pulumiKey(k)
			name := string(nk.Value.(ast.String))
			child := name
			if path != "" {
				child = path + "." + name
			}
			c, _, ok := d.convertValue(t.Get(k), get(um, k), get(sm, k), child)
			if !ok {
				return false
			}
			if path == "" && name == "id" {
				if s, isStr := c.Value.(ast.String); isStr && string(s) != Unknown {
					id = string(s)
				}
				return true
			}
			d.items = append(d.items, [2]*ast.Term{nk, c})
			return true
		}
		for _, k := range t.Keys() {
			if !add(k) {
				return nil, "", false
			}
		}
		if um != nil {
			for _, k := range um.Keys() { // attributes unknown at plan time are absent from "after"
				if t.Get(k) == nil && !add(k) {
					return nil, "", false
				}
			}
		}
		items := d.items[base:]
		if duplicateKeys(items) {
			return nil, "", false
		}
		return d.term(ast.NewObject(items...)), id, true
	case *ast.Array:
		ul, _ := valueOf(unknown).(*ast.Array)
		sl, _ := valueOf(sensitive).(*ast.Array)
		elemPath := path
		if !singleBlock(path) {
			elemPath = lastSegment(path)
		}
		list := make([]*ast.Term, t.Len())
		for i := range list {
			var ok bool
			if list[i], _, ok = d.convertValue(t.Elem(i), elem(ul, i), elem(sl, i), elemPath); !ok {
				return nil, "", false
			}
		}
		if singleBlock(path) {
			if len(list) == 0 {
				return ast.InternedNullTerm, "", true
			}
			return list[0], "", true
		}
		return d.term(ast.NewArray(list...)), "", true
	default:
		return v, "", true
	}
}

// pulumiKey is the key term of the pulumi-gcp name of the Terraform attribute key k.
func (d *valueDecoder) pulumiKey(k *ast.Term) *ast.Term {
	if d.renamed == nil {
		d.renamed = map[*ast.Term]*ast.Term{}
	}
	if nk, ok := d.renamed[k]; ok {
		return nk
	}
	nk := d.key(pulumiName(string(k.Value.(ast.String))))
	d.renamed[k] = nk
	return nk
}

// valueOf is a term's value, nil for no term.
func valueOf(t *ast.Term) ast.Value {
	if t == nil {
		return nil
	}
	return t.Value
}

// get is o's value at k, nil when o is nil or lacks k.
func get(o ast.Object, k *ast.Term) *ast.Term {
	if o == nil {
		return nil
	}
	return o.Get(k)
}

// elem is a's i-th element, nil when a is nil or shorter.
func elem(a *ast.Array, i int) *ast.Term {
	if a == nil || i >= a.Len() {
		return nil
	}
	return a.Elem(i)
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
