package gcpstandin

import (
	"context"
	"fmt"
	"time"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi/sdk/v3/go/property"
)

// TimeVersion is the version of the `time` provider (pulumiverse/pulumi-time, which
// bridges hashicorp/terraform-provider-time) the time stand-in reports.
const TimeVersion = "0.1.1"

// SleepType is time_sleep's type token in the pulumiverse time provider.
const SleepType = "time:index/sleep:Sleep"

// TimeProvider stands in for the `time` provider plugin, which cannot be had here, with
// time_sleep's documented behaviour (the provider's schema, v0.1.1): creating a sleep
// waits createDuration ("Updating this value by itself will not trigger a delay"),
// destroying it waits destroyDuration, and a change of triggers ("Arbitrary map of values
// that, when changed, will run any creation or destroy delays again") replaces it. Its
// id is the time it was created (RFC 3339). Each create and delete is appended to the gcp
// stand-in's ops.log in dir, so tests see where the waits fell.
func TimeProvider(dir string) p.Provider {
	s := &standin{dir: dir}
	wait := func(ctx context.Context, props property.Map, key string) error {
		v, ok := props.GetOk(key)
		if !ok || !v.IsString() || v.AsString() == "" {
			return nil
		}
		d, err := time.ParseDuration(v.AsString())
		if err != nil {
			return fmt.Errorf("%s: %w", key, err)
		}
		select {
		case <-time.After(d):
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return p.Provider{
		GetSchema: func(context.Context, p.GetSchemaRequest) (p.GetSchemaResponse, error) {
			return p.GetSchemaResponse{Schema: fmt.Sprintf(`{"name":"time","version":%q}`, TimeVersion)}, nil
		},
		CheckConfig: func(_ context.Context, req p.CheckRequest) (p.CheckResponse, error) {
			return p.CheckResponse{Inputs: req.Inputs}, nil
		},
		DiffConfig: func(context.Context, p.DiffRequest) (p.DiffResponse, error) { return p.DiffResponse{}, nil },
		Configure:  func(context.Context, p.ConfigureRequest) error { return nil },
		Check: func(_ context.Context, req p.CheckRequest) (p.CheckResponse, error) {
			if req.Urn.Type() != SleepType {
				return p.CheckResponse{}, fmt.Errorf("the time stand-in does not implement %s", req.Urn.Type())
			}
			return p.CheckResponse{Inputs: req.Inputs}, nil
		},
		Diff: func(_ context.Context, req p.DiffRequest) (p.DiffResponse, error) {
			resp := p.DiffResponse{DetailedDiff: map[string]p.PropertyDiff{}}
			for _, k := range []string{"createDuration", "destroyDuration", "triggers"} {
				o, n := req.OldInputs.Get(k), req.Inputs.Get(k)
				if o.Equals(n) {
					continue
				}
				kind := p.Update
				if k == "triggers" {
					kind = p.UpdateReplace
				}
				resp.DetailedDiff[k] = p.PropertyDiff{Kind: kind, InputDiff: true}
				resp.HasChanges = true
			}
			return resp, nil
		},
		Create: func(ctx context.Context, req p.CreateRequest) (p.CreateResponse, error) {
			if req.DryRun {
				return p.CreateResponse{Properties: req.Properties}, nil
			}
			if err := wait(ctx, req.Properties, "createDuration"); err != nil {
				return p.CreateResponse{}, err
			}
			if err := s.log("create", SleepType, req.Urn.Name()); err != nil {
				return p.CreateResponse{}, err
			}
			return p.CreateResponse{ID: time.Now().UTC().Format(time.RFC3339), Properties: req.Properties}, nil
		},
		Read: func(_ context.Context, req p.ReadRequest) (p.ReadResponse, error) {
			return p.ReadResponse{ID: req.ID, Properties: req.Properties, Inputs: req.Inputs}, nil
		},
		Update: func(_ context.Context, req p.UpdateRequest) (p.UpdateResponse, error) {
			return p.UpdateResponse{Properties: req.Inputs}, nil
		},
		Delete: func(ctx context.Context, req p.DeleteRequest) error {
			if err := wait(ctx, req.Properties, "destroyDuration"); err != nil {
				return err
			}
			return s.log("delete", SleepType, req.Urn.Name())
		},
	}
}
