package components

import (
	"fmt"

	"github.com/eventpipe/eventpipe/spec"
	"github.com/pulumi/pulumi-gcp/sdk/v8/go/gcp/firestore"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// FirestoreTTLArgs configure a FirestoreTTL.
type FirestoreTTLArgs struct {
	// Project is the GCP project of the database.
	Project pulumi.StringInput `pulumi:"project"`
	// Database is the Firestore database id, e.g. "(default)".
	Database string `pulumi:"database"`
	// Collections are the collection groups whose documents expire.
	Collections []string `pulumi:"collections"`
	// Field is the timestamp field documents expire by (default expireAt, the consumer's).
	Field string `pulumi:"field,optional"`
	// Apis makes every resource wait for a Project's apis output: the APIs enabled and propagated.
	Apis pulumi.StringArrayInput `pulumi:"apis,optional"`
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
// says why).
type FirestoreTTL struct {
	pulumi.ResourceState

	// FieldNames are the TTL policies' resource names, by collection.
	FieldNames pulumi.StringMapOutput `pulumi:"fields"`

	// Fields are the TTL policies, by collection.
	Fields map[string]*firestore.Field
}

// NewFirestoreTTL declares a FirestoreTTL named name.
func NewFirestoreTTL(ctx *pulumi.Context, name string, args *FirestoreTTLArgs, opts ...pulumi.ResourceOption) (_ *FirestoreTTL, err error) {
	defer declaredAt(calledAt(), &err)
	if args == nil {
		return nil, fmt.Errorf("firestore ttl %s: no arguments; set project, database and collections", name)
	}
	var problems spec.Errors
	if args.Project == nil {
		problems = append(problems, spec.FieldError{Path: "project", Allowed: "a GCP project id", Fix: "set the project of the Firestore database"})
	}
	if args.Database == "" {
		problems = append(problems, spec.FieldError{Path: "database", Allowed: `a database id such as "(default)"`, Fix: "set the Firestore database the consumer writes to"})
	}
	if len(args.Collections) == 0 {
		problems = append(problems, spec.FieldError{Path: "collections", Allowed: "at least one collection group", Fix: "list the collections whose documents expire"})
	}
	if len(problems) > 0 {
		return nil, argsError("firestore ttl", name, problems)
	}
	field := args.Field
	if field == "" {
		field = spec.ExpiryField
	}
	opts = withAPIs(opts, args.Apis)
	t := &FirestoreTTL{Fields: map[string]*firestore.Field{}}
	if err := register(ctx, TypeFirestoreTTL, name, t, opts); err != nil {
		return nil, fmt.Errorf("register firestore ttl component %s: %w", name, err)
	}
	names := pulumi.StringMap{}
	for _, coll := range args.Collections {
		f, err := firestore.NewField(ctx, name+"-"+coll, &firestore.FieldArgs{
			Project:     args.Project,
			Database:    pulumi.String(args.Database),
			Collection:  pulumi.String(coll),
			Field:       pulumi.String(field),
			TtlConfig:   &firestore.FieldTtlConfigArgs{},
			IndexConfig: &firestore.FieldIndexConfigArgs{},
		}, pulumi.Parent(t))
		if err != nil {
			return nil, fmt.Errorf("declare ttl policy on %s.%s: %w", coll, field, err)
		}
		t.Fields[coll] = f
		names[coll] = f.Name
	}
	t.FieldNames = names.ToStringMapOutput()
	if err := ctx.RegisterResourceOutputs(t, outputs(t)); err != nil {
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
