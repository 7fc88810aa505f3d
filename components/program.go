package components

import (
	"encoding/json"
	"fmt"

	"github.com/eventpipe/eventpipe/spec"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// ProgramOptions configure Program.
type ProgramOptions struct {
	// ConfigKeys lists every config key of the stack so unknown eventpipe:
	// keys are reported; nil skips that check (a Pulumi context cannot list
	// its keys). See ConfigKeysFromEnv.
	ConfigKeys []string
	// OnStack, if set, receives the validated stack before resources are declared.
	OnStack func(*spec.Stack)
}

// Program returns the Pulumi program of every eventpipe stack: it reads the
// stack config into a spec.Stack, fails with every validation error before
// declaring anything, then declares one Pipeline per configured pipeline.
// stacks/main.go runs it under `pulumi up`; the offline renderer runs the same
// function with mocks.
func Program(opts ProgramOptions) pulumi.RunFunc {
	return func(ctx *pulumi.Context) error {
		st, err := spec.Load(ctx.Stack(), contextSource{ctx: ctx, keys: opts.ConfigKeys})
		if err != nil {
			return err
		}
		if opts.OnStack != nil {
			opts.OnStack(st)
		}
		return DeclareStack(ctx, st)
	}
}

// DeclareStack declares one Pipeline per pipeline of st, in name order, and
// exports each pipeline's topic, subscriptions and consumer URL. It fails
// before declaring anything when two pipelines would declare the same
// Firestore TTL policy (spec.Load already rejects such a stack; a Stack
// built by hand is checked here).
func DeclareStack(ctx *pulumi.Context, st *spec.Stack) error {
	if err := checkTTLOwners(st); err != nil {
		return err
	}
	for _, p := range st.SortedPipelines() {
		pl, err := NewPipeline(ctx, p.Name, &PipelineArgs{Stack: st, Spec: p})
		if err != nil {
			return fmt.Errorf("pipeline %s: %w", p.Name, err)
		}
		ctx.Export(p.Name+".topic", pl.Topic.Name)
		ctx.Export(p.Name+".consumerUri", pl.Consumer.URI)
	}
	return nil
}

// checkTTLOwners reports two pipelines whose consumers use the same
// collections of one Firestore database: each would declare the same
// gcp:firestore/field:Field.
func checkTTLOwners(st *spec.Stack) error {
	owners := map[string]string{}
	for _, p := range st.SortedPipelines() {
		project, database, ok := p.Consumer.FirestoreDatabase()
		if !ok {
			continue
		}
		key := project + "/" + database + "/" + p.Consumer.CollectionPrefix
		if prev, dup := owners[key]; dup {
			return fmt.Errorf("pipelines %s and %s both use collection prefix %q in firestore://%s/%s: each would declare the same TTL policies; give one its own consumer.collectionPrefix",
				prev, p.Name, p.Consumer.CollectionPrefix, project, database)
		}
		owners[key] = p.Name
	}
	return nil
}

// ConfigKeysFromEnv lists the config keys in the JSON object the Pulumi CLI
// passes to Go programs (the PULUMI_CONFIG variable); value is its content.
func ConfigKeysFromEnv(value string) ([]string, error) {
	if value == "" {
		return nil, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(value), &m); err != nil {
		return nil, fmt.Errorf("parse PULUMI_CONFIG: %w", err)
	}
	return spec.SortedKeys(m), nil
}

// contextSource reads config from a Pulumi context.
type contextSource struct {
	ctx  *pulumi.Context
	keys []string
}

// Get implements spec.Source.
func (s contextSource) Get(key string) (string, bool) { return s.ctx.GetConfig(key) }

// Secret implements spec.Source.
func (s contextSource) Secret(key string) bool { return s.ctx.IsConfigSecret(key) }

// Keys implements spec.Source with the keys given to Program.
func (s contextSource) Keys() []string { return s.keys }
