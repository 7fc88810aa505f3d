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
// stack config (LoadStack), fails with every validation error before
// declaring anything, then declares one Pipeline per configured pipeline.
// stacks/main.go runs it under `pulumi up`; the offline renderer runs the
// same function with mocks.
func Program(opts ProgramOptions) pulumi.RunFunc {
	return func(ctx *pulumi.Context) error {
		st, err := LoadStack(ctx.Stack(), contextSource{ctx: ctx, keys: opts.ConfigKeys})
		if err != nil {
			return err
		}
		if opts.OnStack != nil {
			opts.OnStack(st.Spec)
		}
		return DeclareStack(ctx, st)
	}
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
