package plan

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
)

// The fast path for `terraform show -json` plans: each element of resource_changes is
// decoded and converted to pulumi-gcp's shape straight from its JSON text into OPA values
// (convertedValue is convert on the text; the tests hold both to the same results); only
// the links between resources are resolved afterwards, in one pass over all of them, by
// the general path's own linkTerraform.

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
	var (
		after     = -1 // offset of the "after" value, decoded last
		unknown   *ast.Term
		sensitive *ast.Term
	)
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
				var ok bool
				switch f {
				case 0:
					rc.Change.Actions, ok = d.stringList()
				case 1:
					after = d.pos
					ok = d.skip()
				case 2:
					unknown, ok = d.value(false)
				case 3:
					sensitive, ok = d.value(false)
				}
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
	props, id := absentValue(unknown, sensitive), ""
	if after >= 0 {
		end := d.pos
		d.pos = after
		props, id, ok = d.convertedValue(unknown, sensitive, "")
		d.pos = end
		if !ok {
			return false
		}
	}
	obj, isObj := props.Value.(ast.Object)
	if !isObj {
		obj = ast.NewObject()
	}
	t.res = Resource{URN: rc.Address, Type: pulumiType(rc.Type), Name: rc.Address, Op: strings.Join(rc.Change.Actions, "+"), ID: id, props: obj}
	return true
}

// convertedValue decodes the Terraform value at the decoder's position ("after", or a
// part of it at path) straight into pulumi-gcp's shape, with its after_unknown and
// after_sensitive twins (nil when absent): convert's rules, on the JSON text. At the top
// (path ""), the "id" attribute is taken out of the object and returned when it is a
// known string (tfResource's rule). ok is false for malformed JSON or an object whose
// keys repeat, or collide once renamed.
func (d *valueDecoder) convertedValue(unknown, sensitive *ast.Term, path string) (out *ast.Term, id string, ok bool) {
	if isTrue(unknown) || isTrue(sensitive) {
		return absentValue(unknown, sensitive), "", d.skip()
	}
	d.skipSpace()
	if d.pos >= len(d.data) {
		return nil, "", false
	}
	switch d.data[d.pos] {
	case '{':
		um, _ := valueOf(unknown).(ast.Object)
		sm, _ := valueOf(sensitive).(ast.Object)
		base := len(d.items)
		defer func() { d.items = d.items[:base] }()
		var seen keySet
		add := func(k *ast.Term, present bool) bool {
			nk := k
			if !mapAttribute(path) {
				nk = d.pulumiKey(k)
			}
			name := string(nk.Value.(ast.String))
			child := name
			if path != "" {
				child = path + "." + name
			}
			c := absentValue(get(um, k), get(sm, k))
			if present {
				var ok bool
				if c, _, ok = d.convertedValue(get(um, k), get(sm, k), child); !ok {
					return false
				}
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
		ok := d.members(func(raw []byte, off int) bool {
			k := d.internKey(raw, off)
			return seen.add(k) && add(k, true)
		})
		if !ok {
			return nil, "", false
		}
		if um != nil {
			for _, k := range um.Keys() { // attributes unknown at plan time are absent from "after"
				if !seen.has(k) && !add(k, false) {
					return nil, "", false
				}
			}
		}
		items := d.items[base:]
		if duplicateKeys(items) {
			return nil, "", false
		}
		return d.term(ast.NewObject(items...)), id, true
	case '[':
		ul, _ := valueOf(unknown).(*ast.Array)
		sl, _ := valueOf(sensitive).(*ast.Array)
		elemPath := path
		if !singleBlock(path) {
			elemPath = lastSegment(path)
		}
		var list []*ast.Term
		ok := d.elements(func() bool {
			e, _, ok := d.convertedValue(elem(ul, len(list)), elem(sl, len(list)), elemPath)
			list = append(list, e)
			return ok
		})
		if !ok {
			return nil, "", false
		}
		if singleBlock(path) {
			if len(list) == 0 {
				return ast.InternedNullTerm, "", true
			}
			return list[0], "", true
		}
		return d.term(ast.NewArray(list...)), "", true
	default:
		v, ok := d.value(false)
		return v, "", ok
	}
}

// keySet is a set of a decoder's (interned) key terms: a slice while small.
type keySet struct {
	list []*ast.Term
	big  map[*ast.Term]bool
}

// add adds k and reports whether it was new.
func (s *keySet) add(k *ast.Term) bool {
	if s.has(k) {
		return false
	}
	if s.big == nil && len(s.list) < 32 {
		s.list = append(s.list, k)
		return true
	}
	if s.big == nil {
		s.big = make(map[*ast.Term]bool, 64)
		for _, e := range s.list {
			s.big[e] = true
		}
	}
	s.big[k] = true
	return true
}

func (s *keySet) has(k *ast.Term) bool {
	if s.big != nil {
		return s.big[k]
	}
	return slices.Contains(s.list, k)
}

// absentValue is what convert makes of a value absent from "after" (or known to be
// unknown or sensitive): Unknown, Secret or null.
func absentValue(unknown, sensitive *ast.Term) *ast.Term {
	switch {
	case isTrue(unknown):
		return ast.StringTerm(Unknown)
	case isTrue(sensitive):
		return ast.StringTerm(Secret)
	}
	return ast.InternedNullTerm
}

// isTrue reports whether t is the JSON true.
func isTrue(t *ast.Term) bool {
	return t != nil && t.Value.Compare(ast.InternedBooleanTrue.Value) == 0
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
	p := &Plan{Format: FormatTerraform, Complete: true}
	var kept []*tfResourceChange
	for i := range top.changes {
		if rc := &top.changes[i].rc; planned(rc) {
			kept = append(kept, rc)
			p.Resources = append(p.Resources, top.changes[i].res)
		}
	}
	refs := make(map[string]map[string][]string, len(top.configured))
	for _, c := range top.configured {
		refs[c.address] = c.byAttr
	}
	linkTerraform(p.Resources, kept, refs)
	eachShard(len(p.Resources), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			cacheValue(nil, &p.Resources[i])
		}
	})
	return p, true
}

// tfConfigured is a configured resource read by the fast path: its address with its
// module's prefix, and its references by attribute (see collectReferences).
type tfConfigured struct {
	address string
	byAttr  map[string][]string
}

func configurationField(key []byte) int { return known(key, "root_module") }

func moduleField(key []byte) int { return known(key, "resources", "module_calls") }

func moduleCallField(key []byte) int { return known(key, "module") }

func configResourceField(key []byte) int { return known(key, "address", "expressions") }

// configuration decodes the configuration object at the decoder's position into the
// references of every configured resource, in collectReferences' order.
func (d *valueDecoder) configuration() ([]tfConfigured, bool) {
	configured := []tfConfigured{}
	ok := d.fields(configurationField, func(int) bool {
		var ok bool
		configured, ok = d.moduleConfig("")
		return ok
	})
	return configured, ok
}

// moduleConfig decodes a module's configuration: its resources (on every processor for
// many), then its module calls in name order.
func (d *valueDecoder) moduleConfig(prefix string) ([]tfConfigured, bool) {
	if d.isNull() {
		return nil, true
	}
	var (
		resources []tfConfigured
		calls     = map[string][]tfConfigured{}
	)
	ok := d.fields(moduleField, func(f int) bool {
		if d.isNull() {
			return true
		}
		var ok bool
		if f == 0 {
			resources, d.pos, ok = decodeArray(d.data, d.pos, func(d *valueDecoder, out *tfConfigured) bool {
				return d.configuredResource(prefix, out)
			})
			return ok
		}
		return d.members(func(name []byte, _ int) bool {
			n := string(name)
			if _, dup := calls[n]; dup {
				return false
			}
			calls[n] = []tfConfigured{}
			return d.fields(moduleCallField, func(int) bool {
				inner, ok := d.moduleConfig(prefix + "module." + n + ".")
				calls[n] = inner
				return ok
			})
		})
	})
	if !ok {
		return nil, false
	}
	for _, name := range slices.Sorted(maps.Keys(calls)) {
		resources = append(resources, calls[name]...)
	}
	return resources, true
}

// configuredResource decodes one configured resource and the references of its
// attributes' expressions (references' rules, on OPA values).
func (d *valueDecoder) configuredResource(prefix string, out *tfConfigured) bool {
	var exprs [][2]*ast.Term
	ok := d.fields(configResourceField, func(f int) bool {
		var ok bool
		if f == 0 {
			out.address, ok = d.optString()
			out.address = prefix + out.address
			return ok
		}
		if d.isNull() {
			return true
		}
		t, ok := d.value(false)
		if !ok {
			return false
		}
		obj, isObj := t.Value.(ast.Object)
		if !isObj {
			return false
		}
		obj.Foreach(func(k, v *ast.Term) { exprs = append(exprs, [2]*ast.Term{k, v}) })
		return true
	})
	if !ok {
		return false
	}
	out.byAttr = map[string][]string{}
	slices.SortFunc(exprs, func(a, b [2]*ast.Term) int { return a[0].Value.Compare(b[0].Value) })
	for _, e := range exprs {
		attr, isStr := e[0].Value.(ast.String)
		if !isStr {
			return false
		}
		addReferences(out.byAttr, string(attr), prefix, func(fn func(string)) { walkTermReferences(e[1], fn) })
	}
	return true
}

// walkTermReferences is walkReferences on an OPA value.
func walkTermReferences(t *ast.Term, fn func(string)) {
	switch v := t.Value.(type) {
	case ast.Object:
		refsKey := ast.InternedTerm("references")
		if refs, ok := valueOf(v.Get(refsKey)).(*ast.Array); ok {
			refs.Foreach(func(r *ast.Term) {
				if s, ok := r.Value.(ast.String); ok {
					fn(string(s))
				}
			})
		}
		v.Foreach(func(k, e *ast.Term) {
			if k.Value.Compare(refsKey.Value) != 0 {
				walkTermReferences(e, fn)
			}
		})
	case *ast.Array:
		v.Foreach(func(e *ast.Term) { walkTermReferences(e, fn) })
	}
}
