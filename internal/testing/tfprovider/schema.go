package tfprovider

import (
	"slices"
	"strings"

	"github.com/hashicorp/terraform-plugin-go/tfprotov5"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
)

// opts are the flags of a schema field, as the real provider's SDKv2 schema declares
// them.
type opts uint8

const (
	required opts = 1 << iota
	optional
	computed
	// forceNew: a change replaces the resource.
	forceNew
)

// field is one attribute or nested block of a resource's schema, in the terms of the
// plugin SDK the real provider is written with (TypeString, TypeList of a Resource with
// MaxItems 1, ...). protoBlock turns a list of fields into the wire schema the SDK would
// send, so the stand-in reports to Terraform what the real provider reports.
type field struct {
	name string
	// typ is the attribute's type; nil for a nested block.
	typ  tftypes.Type
	opts opts
	// def is the SDK Default of an optional attribute, planned when the configuration
	// leaves it unset.
	def any
	// For nested blocks: how the block nests (list or set), its item limits and fields.
	nesting  tfprotov5.SchemaNestedBlockNestingMode
	minItems int64
	maxItems int64
	fields   []field
}

func attr(name string, t tftypes.Type, o opts) field { return field{name: name, typ: t, opts: o} }

func str(name string, o opts) field { return attr(name, tftypes.String, o) }

// integer and float are both numbers on the wire (TypeInt, TypeFloat).
func integer(name string, o opts) field { return attr(name, tftypes.Number, o) }

func float(name string, o opts) field { return attr(name, tftypes.Number, o) }

func boolean(name string, o opts) field { return attr(name, tftypes.Bool, o) }

func strMap(name string, o opts) field {
	return attr(name, tftypes.Map{ElementType: tftypes.String}, o)
}

func strList(name string, o opts) field {
	return attr(name, tftypes.List{ElementType: tftypes.String}, o)
}

func strSet(name string, o opts) field {
	return attr(name, tftypes.Set{ElementType: tftypes.String}, o)
}

// withDefault returns f with the SDK Default v (a string, int or bool).
func (f field) withDefault(v any) field {
	f.def = v
	return f
}

// list is a TypeList of a nested Resource: a list block, or — when only computed — an
// attribute holding a list of objects, as the SDK represents it.
func list(name string, o opts, maxItems int64, fields ...field) field {
	return field{name: name, opts: o, nesting: tfprotov5.SchemaNestedBlockNestingModeList, maxItems: maxItems, fields: fields}
}

// set is a TypeSet of a nested Resource.
func set(name string, o opts, fields ...field) field {
	return field{name: name, opts: o, nesting: tfprotov5.SchemaNestedBlockNestingModeSet, fields: fields}
}

// single is a block of at most one item that is not a list (the SDK's timeouts block).
func single(name string, fields ...field) field {
	return field{name: name, opts: optional, nesting: tfprotov5.SchemaNestedBlockNestingModeSingle, fields: fields}
}

func (f field) isBlock() bool { return f.typ == nil }

// asAttribute reports whether the SDK sends nested block f as an attribute: a
// computed-only TypeList or TypeSet never appears in configuration.
func (f field) asAttribute() bool {
	return f.isBlock() && f.opts&computed != 0 && f.opts&optional == 0
}

// computedBlock reports whether f is an optional and computed block, which the real
// provider plans from the API (unknown on create, the prior value on update) when the
// configuration leaves it out.
func (f field) computedBlock() bool {
	return f.isBlock() && f.opts&computed != 0 && f.opts&optional != 0
}

// valueType is the type of f's value in a resource object.
func (f field) valueType() tftypes.Type {
	if !f.isBlock() {
		return f.typ
	}
	obj := objectType(f.fields)
	switch f.nesting {
	case tfprotov5.SchemaNestedBlockNestingModeSet:
		return tftypes.Set{ElementType: obj}
	case tfprotov5.SchemaNestedBlockNestingModeSingle:
		return obj
	}
	return tftypes.List{ElementType: obj}
}

// objectType is the object type of a block of fields.
func objectType(fields []field) tftypes.Object {
	types := make(map[string]tftypes.Type, len(fields))
	for _, f := range fields {
		types[f.name] = f.valueType()
	}
	return tftypes.Object{AttributeTypes: types}
}

// protoBlock converts fields to the wire schema as the SDK does: attributes and blocks in
// name order; a required block needs one item; an optional block needs none.
func protoBlock(fields []field) *tfprotov5.SchemaBlock {
	b := &tfprotov5.SchemaBlock{}
	for _, f := range fields {
		if !f.isBlock() || f.asAttribute() {
			b.Attributes = append(b.Attributes, &tfprotov5.SchemaAttribute{
				Name:     f.name,
				Type:     f.valueType(),
				Required: f.opts&required != 0,
				Optional: f.opts&optional != 0,
				Computed: f.opts&computed != 0,
			})
			continue
		}
		nb := &tfprotov5.SchemaNestedBlock{TypeName: f.name, Block: protoBlock(f.fields), Nesting: f.nesting, MinItems: f.minItems, MaxItems: f.maxItems}
		if f.opts&required != 0 && nb.MinItems == 0 {
			nb.MinItems = 1
		}
		if f.opts&optional != 0 {
			nb.MinItems = 0
		}
		b.BlockTypes = append(b.BlockTypes, nb)
	}
	slices.SortFunc(b.Attributes, func(x, y *tfprotov5.SchemaAttribute) int { return strings.Compare(x.Name, y.Name) })
	slices.SortFunc(b.BlockTypes, func(x, y *tfprotov5.SchemaNestedBlock) int { return strings.Compare(x.TypeName, y.TypeName) })
	return b
}

// lookup returns the field called name, if fields has one.
func lookup(fields []field, name string) (field, bool) {
	for _, f := range fields {
		if f.name == name {
			return f, true
		}
	}
	return field{}, false
}
