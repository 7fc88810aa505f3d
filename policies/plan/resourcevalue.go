package plan

import (
	"cmp"
	"fmt"
	"reflect"
	"runtime"
	"sync"

	"github.com/open-policy-agent/opa/v1/ast"
)

// Properties returns the resource's properties as plain Go values (objects as
// map[string]any, arrays as []any, numbers as json.Number): a new copy on each call,
// converted from the OPA value Parse built.
func (r *Resource) Properties() map[string]any {
	if r.props == nil {
		return map[string]any{}
	}
	v, err := ast.JSON(r.props)
	if err != nil { // a parsed plan holds JSON values only
		return map[string]any{}
	}
	m, _ := v.(map[string]any)
	return m
}

// PropertiesValue returns the properties object in OPA's value form, shared with the
// plan: callers must not modify it.
func (r *Resource) PropertiesValue() ast.Value {
	if r.props == nil {
		return ast.NewObject()
	}
	return r.props
}

// Value returns the resource as OPA input for resource rules, the shape Pulumi's OPA
// analyzer gives them: {"urn", "type", "name", "properties", "id" (when known),
// "dependencies", "propertyDependencies"}. Parse builds it with the resource (on the
// processor that decoded it); it is built again when URN, Type, Name, ID, Dependencies or
// PropertyDependencies were given other values since. Edits inside the Dependencies slice
// or the PropertyDependencies map are not seen: replace them instead. The value is shared:
// callers must not modify it.
func (r *Resource) Value() ast.Value {
	if r.value != nil && r.built.matches(r) {
		return r.value
	}
	return buildValue(nil, r)
}

// builtFrom records the fields a resource's cached value was built from.
type builtFrom struct {
	urn, typ, name, id string
	deps               []string
	pdeps              map[string][]string
}

func snapshot(r *Resource) builtFrom {
	return builtFrom{urn: r.URN, typ: r.Type, name: r.Name, id: r.ID, deps: r.Dependencies, pdeps: r.PropertyDependencies}
}

// matches reports whether r's fields are still the ones the value was built from (the
// same strings, the same slice and map).
func (b *builtFrom) matches(r *Resource) bool {
	return b.urn == r.URN && b.typ == r.Type && b.name == r.Name && b.id == r.ID &&
		len(b.deps) == len(r.Dependencies) && (len(b.deps) == 0 || &b.deps[0] == &r.Dependencies[0]) &&
		reflect.ValueOf(b.pdeps).UnsafePointer() == reflect.ValueOf(r.PropertyDependencies).UnsafePointer()
}

// cacheValue builds r's value with decoder d (nil: plain allocations) and keeps it.
func cacheValue(d *valueDecoder, r *Resource) {
	r.value = buildValue(d, r)
	r.built = snapshot(r)
}

// buildValue builds the value Value returns, with decoder d's interned keys and term slab
// (nil: plain allocations).
func buildValue(d *valueDecoder, r *Resource) ast.Value {
	// The URNs of propertyDependencies are among the dependencies: one term serves both.
	deps := make([]*ast.Term, len(r.Dependencies))
	for i, dep := range r.Dependencies {
		deps[i] = d.term(ast.String(dep))
	}
	urn := func(u string) *ast.Term {
		for i, dep := range r.Dependencies {
			if dep == u {
				return deps[i]
			}
		}
		return d.term(ast.String(u))
	}
	pdeps := make([][2]*ast.Term, 0, len(r.PropertyDependencies))
	for k, urns := range r.PropertyDependencies {
		l := make([]*ast.Term, len(urns))
		for i, u := range urns {
			l[i] = urn(u)
		}
		pdeps = append(pdeps, [2]*ast.Term{d.key(k), d.term(ast.NewArray(l...))})
	}
	keys := d.inputKeys()
	items := make([][2]*ast.Term, 0, 7)
	items = append(items,
		[2]*ast.Term{keys[inputURN], d.term(ast.String(r.URN))},
		[2]*ast.Term{keys[inputType], d.key(r.Type)},
		[2]*ast.Term{keys[inputName], d.term(ast.String(r.Name))},
		[2]*ast.Term{keys[inputProperties], d.term(r.PropertiesValue())},
		[2]*ast.Term{keys[inputDependencies], d.term(ast.NewArray(deps...))},
		[2]*ast.Term{keys[inputPropertyDependencies], d.term(ast.NewObject(pdeps...))},
	)
	if r.ID != "" {
		items = append(items, [2]*ast.Term{keys[inputID], d.term(ast.String(r.ID))})
	}
	return ast.NewObject(items...)
}

// The keys of a resource's input object, as inputKeys numbers them.
const (
	inputURN = iota
	inputType
	inputName
	inputProperties
	inputDependencies
	inputPropertyDependencies
	inputID
)

// inputKeys returns the terms of the keys of a resource's input object, made once per
// decoder (each time for a nil decoder).
func (d *valueDecoder) inputKeys() *[7]*ast.Term {
	if d != nil && d.resourceKeys[0] != nil {
		return &d.resourceKeys
	}
	var keys [7]*ast.Term
	for i, k := range []string{"urn", "type", "name", "properties", "dependencies", "propertyDependencies", "id"} {
		keys[i] = d.key(k)
	}
	if d == nil {
		return &keys
	}
	d.resourceKeys = keys
	return &d.resourceKeys
}

// setProperties converts each resource's properties map to OPA's value form, on every
// processor for a large plan. The general parsing path builds maps; this is its last step.
func setProperties(rs []Resource, props []map[string]any) error {
	var (
		mu       sync.Mutex
		firstErr error
	)
	eachShard(len(rs), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			v, err := ast.InterfaceToValue(props[i])
			if err != nil {
				mu.Lock()
				firstErr = cmp.Or(firstErr, fmt.Errorf("converting the properties of %s: %w", rs[i].URN, err))
				mu.Unlock()
				return
			}
			rs[i].props = v
			cacheValue(nil, &rs[i])
		}
	})
	return firstErr
}

// eachShard calls fn on consecutive shards of [0, n), one per processor at once, or on
// all of it on the calling goroutine when n is too small to share.
func eachShard(n int, fn func(lo, hi int)) {
	shards := min(runtime.GOMAXPROCS(0), n/minPerWorker)
	if shards <= 1 {
		fn(0, n)
		return
	}
	var wg sync.WaitGroup
	for s := 0; s < shards; s++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fn(s*n/shards, (s+1)*n/shards)
		}()
	}
	wg.Wait()
}
