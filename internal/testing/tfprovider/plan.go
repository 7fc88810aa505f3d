package tfprovider

import (
	"maps"
	"math/big"

	"github.com/hashicorp/terraform-plugin-go/tfprotov5"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
)

// Planning as the plugin SDK (v2) plans for the real provider: Terraform proposes the
// configuration merged with the prior state's computed values; the SDK plans an unset
// optional attribute's Default, leaves a computed value unknown on create (and keeps the
// prior one on update), runs the resource's CustomizeDiff steps, and asks for a
// replacement when a ForceNew value changes — replacing plans like creating.

// attributionKey and attributionValue are the label the real provider adds to every
// labelled resource it creates (add_terraform_attribution_label, default true).
const (
	attributionKey   = "goog-terraform-provisioned"
	attributionValue = "true"
)

// providerConfig is the provider block's configuration that planning uses.
type providerConfig struct {
	project        string
	region         string
	defaultLabels  map[string]string
	attribution    bool
	proactive      bool // terraform_attribution_label_addition_strategy = "PROACTIVE"
	deletionPolicy string
}

// plan returns the planned object for a create (prior nil) or update, and the paths
// whose change forces a replacement.
func (r *resourceType) plan(proposed, config, prior object, p *providerConfig) (object, []*tftypes.AttributePath) {
	create := prior == nil
	planned := r.planOnce(proposed, config, prior, create, p)
	if create {
		return planned, nil
	}
	paths := replacePaths(r.allFields(), prior, planned, tftypes.NewAttributePath())
	if len(paths) > 0 {
		planned = r.planOnce(proposed, config, nil, true, p)
	}
	return planned, paths
}

func (r *resourceType) planOnce(proposed, config, prior object, create bool, p *providerConfig) object {
	planned := planBlock(r.allFields(), proposed, config, prior, create)
	if create {
		planned["id"] = unknown
	}
	if r.project && config["project"] == nil && p.project != "" {
		planned["project"] = p.project
	}
	if r.deletionPolicy != "" && config["deletion_policy"] == nil {
		planned["deletion_policy"] = r.deletionPolicy
		if p.deletionPolicy != "" {
			planned["deletion_policy"] = p.deletionPolicy
		}
	}
	if r.labels {
		planLabels(planned, prior, create, p)
	}
	if r.annotations {
		planAnnotations(planned, prior)
	}
	return planned
}

// planBlock plans the object of a block of fields.
func planBlock(fields []field, proposed, config, prior object, create bool) object {
	out := maps.Clone(proposed)
	if out == nil {
		out = object{}
	}
	for _, f := range fields {
		cv := config[f.name]
		switch {
		case !f.isBlock() || f.asAttribute():
			if cv != nil {
				continue
			}
			switch {
			case f.def != nil:
				out[f.name] = defaultValue(f.def)
			case f.opts&computed != 0 && create:
				out[f.name] = unknown
			}
		case f.nesting == tfprotov5.SchemaNestedBlockNestingModeSingle, isUnknown(cv):
			// A timeouts block is taken as configured; a dynamic block whose items are
			// not known yet stays unknown.
		default:
			items, _ := cv.([]any)
			if len(items) == 0 && f.computedBlock() {
				if create {
					out[f.name] = unknown
				} else {
					out[f.name] = prior[f.name]
				}
				continue
			}
			out[f.name] = planItems(f, proposed[f.name], items, prior[f.name], create)
		}
	}
	return out
}

// planItems plans the items of a list or set block. A list's items pair with the
// configuration's and the prior state's by position; a set item is its own configuration.
func planItems(f field, proposed any, config []any, prior any, create bool) any {
	items, ok := proposed.([]any)
	if !ok {
		return proposed
	}
	priorItems, _ := prior.([]any)
	out := make([]any, len(items))
	for i, it := range items {
		item, ok := it.(object)
		if !ok {
			out[i] = it
			continue
		}
		ci, pi := item, object(nil)
		if f.nesting == tfprotov5.SchemaNestedBlockNestingModeList {
			ci = nil
			if i < len(config) {
				ci, _ = config[i].(object)
			}
			if i < len(priorItems) {
				pi, _ = priorItems[i].(object)
			}
		}
		out[i] = planBlock(f.fields, item, ci, pi, create || pi == nil)
	}
	return out
}

func defaultValue(v any) any {
	if i, ok := v.(int); ok {
		return big.NewFloat(float64(i))
	}
	return v
}

// replacePaths lists the ForceNew fields whose planned value differs from the prior one.
func replacePaths(fields []field, prior, planned object, at *tftypes.AttributePath) []*tftypes.AttributePath {
	var paths []*tftypes.AttributePath
	for _, f := range fields {
		p := at.WithAttributeName(f.name)
		if f.opts&forceNew != 0 {
			if !equal(prior[f.name], planned[f.name]) {
				paths = append(paths, p)
			}
			continue
		}
		if !f.isBlock() || f.asAttribute() || f.nesting != tfprotov5.SchemaNestedBlockNestingModeList {
			continue
		}
		was, _ := prior[f.name].([]any)
		now, _ := planned[f.name].([]any)
		for i := range min(len(was), len(now)) {
			po, _ := was[i].(object)
			no, _ := now[i].(object)
			paths = append(paths, replacePaths(f.fields, po, no, p.WithElementKeyInt(i))...)
		}
	}
	return paths
}

// planLabels is SetLabelsDiff: terraform_labels are the provider's default labels, the
// attribution label (on create, or when the resource has it), and the resource's labels;
// effective_labels are the prior effective labels updated with them. Unknown labels make
// both unknown.
func planLabels(planned, prior object, create bool, p *providerConfig) {
	labels := planned["labels"]
	if !wholeKnown(labels) {
		planned["terraform_labels"], planned["effective_labels"] = unknown, unknown
		return
	}
	tf := object{}
	for k, v := range p.defaultLabels {
		tf[k] = v
	}
	priorEffective, _ := prior["effective_labels"].(object)
	if _, had := priorEffective[attributionKey]; p.attribution && (had || p.proactive || create) {
		tf[attributionKey] = attributionValue
	}
	if m, ok := labels.(object); ok {
		maps.Copy(tf, m)
	}
	planned["terraform_labels"] = tf
	planned["effective_labels"] = updated(priorEffective, prior["terraform_labels"], tf)
}

// planAnnotations is SetAnnotationsDiff: effective_annotations are the prior ones updated
// with the annotations.
func planAnnotations(planned, prior object) {
	annotations := planned["annotations"]
	if !wholeKnown(annotations) {
		planned["effective_annotations"] = unknown
		return
	}
	now, _ := annotations.(object)
	if now == nil {
		now = object{}
	}
	priorEffective, _ := prior["effective_annotations"].(object)
	planned["effective_annotations"] = updated(priorEffective, prior["annotations"], now)
}

// updated is effective with the keys of now set and the keys only in was removed.
func updated(effective object, was any, now object) object {
	out := maps.Clone(effective)
	if out == nil {
		out = object{}
	}
	maps.Copy(out, now)
	if old, ok := was.(object); ok {
		for k := range old {
			if _, kept := now[k]; !kept {
				delete(out, k)
			}
		}
	}
	return out
}

// wholeKnown reports whether v holds no unknown value at any depth.
func wholeKnown(v any) bool {
	switch x := v.(type) {
	case unknownValue:
		return false
	case []any:
		for _, e := range x {
			if !wholeKnown(e) {
				return false
			}
		}
	case object:
		for _, e := range x {
			if !wholeKnown(e) {
				return false
			}
		}
	}
	return true
}
