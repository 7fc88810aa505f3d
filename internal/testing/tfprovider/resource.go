package tfprovider

import (
	"github.com/hashicorp/terraform-plugin-go/tfprotov5"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
)

// resourceType is a managed resource or data source type of the stand-in: its schema
// as the real provider declares it and the few planning steps (the SDK's CustomizeDiff
// functions) the real provider runs for it.
type resourceType struct {
	name string
	// version is the SDK SchemaVersion, recorded in state.
	version int64
	fields  []field
	// timeouts are the operations the SDK's timeouts block offers (create, read, update,
	// delete), none when the real resource declares no Timeouts.
	timeouts []string

	// The real resource's CustomizeDiff steps: labels sets terraform_labels and
	// effective_labels (SetLabelsDiff), annotations sets effective_annotations
	// (SetAnnotationsDiff), project plans the provider's project when unset
	// (DefaultProviderProject), deletionPolicy plans this default deletion_policy
	// (DefaultProviderDeletionPolicy).
	labels, annotations, project bool
	deletionPolicy               string

	// id is the id the real provider sets on create, from the applied values.
	id func(v object) string
	// created fills in what the API returns on create, for a value planned unknown
	// (nil: only id, then the generic empty values).
	created func(v object, p *providerConfig)
	// read is a data source's read: it sets the computed values from the configured ones.
	read func(v object, p *providerConfig) error
}

// allFields are the fields the SDK serves for r: its own, an optional and computed id
// unless it declares one, and a timeouts block when it has timeouts.
func (r *resourceType) allFields() []field {
	fields := r.fields
	if _, ok := lookup(fields, "id"); !ok {
		fields = append(fields[:len(fields):len(fields)], str("id", optional|computed))
	}
	if len(r.timeouts) > 0 {
		var ts []field
		for _, op := range r.timeouts {
			ts = append(ts, str(op, optional))
		}
		fields = append(fields[:len(fields):len(fields)], single("timeouts", ts...))
	}
	return fields
}

func (r *resourceType) schema() *tfprotov5.Schema {
	return &tfprotov5.Schema{Version: r.version, Block: protoBlock(r.allFields())}
}

func (r *resourceType) objectType() tftypes.Object { return objectType(r.allFields()) }
