package components

import (
	"fmt"

	"github.com/eventpipe/eventpipe/spec"
	"github.com/pulumi/pulumi-gcp/sdk/v8/go/gcp/firestore"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// FirestoreTTLArgs configures a FirestoreTTL.
type FirestoreTTLArgs struct {
	// Project is the GCP project of the database.
	Project string
	// Database is the Firestore database id, e.g. "(default)".
	Database string
	// Collections are the collection groups whose documents expire.
	Collections []string
	// Field is the timestamp field documents expire by (spec.ExpiryField).
	Field string
}

// FirestoreTTL puts a TTL policy on the expiry field of each collection group
// the consumer writes records with a lifetime into (dedupe, leases, receipts,
// poison), so they do not grow forever. Each is a firestore.Field with a
// non-nil TtlConfig (a nil one silently disables TTL) and an empty
// IndexConfig, which exempts the field from single-field indexing: a
// monotonically increasing indexed timestamp would limit write throughput.
// Firestore deletes expired documents within about a day, so the consumer
// still checks expiry itself.
//
// A Field is one object of the database per (project, database, collection
// group, field): declaring it twice makes the second create fail or two
// owners fight over it (and destroying either removes the policy). Each
// Pipeline declares the FirestoreTTL of its own collections, which are its
// own because spec gives every pipeline its own collection prefix and
// rejects two pipelines sharing one in a store (spec.PipelineCollectionPrefix
// says why); DeclareStack checks it again before declaring anything.
type FirestoreTTL struct {
	pulumi.ResourceState

	// Fields are the TTL policies, by collection.
	Fields map[string]*firestore.Field
}

// NewFirestoreTTL declares a FirestoreTTL named name.
func NewFirestoreTTL(ctx *pulumi.Context, name string, args *FirestoreTTLArgs, opts ...pulumi.ResourceOption) (*FirestoreTTL, error) {
	t := &FirestoreTTL{Fields: map[string]*firestore.Field{}}
	if err := ctx.RegisterComponentResource(TypeFirestoreTTL, name, t, opts...); err != nil {
		return nil, fmt.Errorf("register firestore ttl component %s: %w", name, err)
	}
	outputs := pulumi.Map{}
	for _, coll := range args.Collections {
		f, err := firestore.NewField(ctx, name+"-"+coll, &firestore.FieldArgs{
			Project:     pulumi.String(args.Project),
			Database:    pulumi.String(args.Database),
			Collection:  pulumi.String(coll),
			Field:       pulumi.String(args.Field),
			TtlConfig:   &firestore.FieldTtlConfigArgs{},
			IndexConfig: &firestore.FieldIndexConfigArgs{},
		}, pulumi.Parent(t))
		if err != nil {
			return nil, fmt.Errorf("declare ttl policy on %s.%s: %w", coll, args.Field, err)
		}
		t.Fields[coll] = f
		outputs[coll] = f.Name
	}
	if err := ctx.RegisterResourceOutputs(t, outputs); err != nil {
		return nil, fmt.Errorf("register firestore ttl outputs %s: %w", name, err)
	}
	return t, nil
}

// TTLCollections are the consumer's collections with the given prefix.
func TTLCollections(prefix string) []string {
	var out []string
	for _, c := range spec.StoreCollections() {
		out = append(out, prefix+c)
	}
	return out
}
