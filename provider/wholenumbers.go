package provider

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi/sdk/v3/go/common/tokens"
	"github.com/pulumi/pulumi/sdk/v3/go/property"

	"github.com/eventpipe/eventpipe/components"
	"github.com/eventpipe/eventpipe/spec"
)

// schemaProperty is what wholeNumbers reads of a property in the package schema.
type schemaProperty struct {
	Type                 string          `json:"type"`
	Ref                  string          `json:"$ref"`
	Items                *schemaProperty `json:"items"`
	AdditionalProperties *schemaProperty `json:"additionalProperties"`
}

// packageSchema is what wholeNumbers reads of the package schema.
type packageSchema struct {
	Resources map[string]struct {
		InputProperties map[string]schemaProperty `json:"inputProperties"`
	} `json:"resources"`
	Types map[string]struct {
		Properties map[string]schemaProperty `json:"properties"`
	} `json:"types"`
}

// refuseCutNumbers wraps prov's Construct so that a number the schema types integer
// (maxDeliveryAttempts, concurrency, …) is judged as a stack file's is (spec.CountError)
// before the Pulumi SDK decodes the inputs: it cuts a fraction off silently, so 5.5
// attempts became 5, and 100.9 became 100 and passed, where a stack file refuses both.
func refuseCutNumbers(prov p.Provider) p.Provider {
	getSchema, construct := prov.GetSchema, prov.Construct
	var (
		once   sync.Once
		pkg    packageSchema
		pkgErr error
	)
	prov.Construct = func(ctx context.Context, req p.ConstructRequest) (p.ConstructResponse, error) {
		once.Do(func() { // the schema needs the run information a served provider's ctx has
			resp, err := getSchema(ctx, p.GetSchemaRequest{})
			if err == nil {
				err = json.Unmarshal([]byte(resp.Schema), &pkg)
			}
			if err != nil {
				pkgErr = fmt.Errorf("read the provider's schema: %w", err)
			}
		})
		if pkgErr != nil {
			return p.ConstructResponse{}, pkgErr
		}
		typ := string(req.Urn.Type())
		if res, ok := pkg.Resources[typ]; ok {
			var errs spec.Errors
			req.Inputs.AllStable(func(key string, v property.Value) bool {
				if ps, ok := res.InputProperties[key]; ok {
					errs = append(errs, pkg.wholeNumbers(typ, key, ps, v)...)
				}
				return true
			})
			if len(errs) > 0 {
				kind := strings.ToLower(tokens.Type(typ).Name().String())
				return p.ConstructResponse{}, fmt.Errorf("%s %s: %w", kind, req.Urn.Name(), errs)
			}
		}
		return construct(ctx, req)
	}
	return prov
}

// wholeNumbers are the refusals of the numbers in v, the input at path of a component of
// type typ, where its schema ps types an integer.
func (pkg packageSchema) wholeNumbers(typ, path string, ps schemaProperty, v property.Value) spec.Errors {
	var errs spec.Errors
	switch {
	case v.IsComputed():
	case ps.Ref != "":
		t, ok := pkg.Types[strings.TrimPrefix(ps.Ref, "#/types/")]
		if !ok || !v.IsMap() {
			break
		}
		v.AsMap().AllStable(func(key string, x property.Value) bool {
			if kps, ok := t.Properties[key]; ok {
				errs = append(errs, pkg.wholeNumbers(typ, path+"."+key, kps, x)...)
			}
			return true
		})
	case ps.Type == "array" && ps.Items != nil && v.IsArray():
		v.AsArray().All(func(i int, x property.Value) bool {
			errs = append(errs, pkg.wholeNumbers(typ, fmt.Sprintf("%s[%d]", path, i), *ps.Items, x)...)
			return true
		})
	case ps.Type == "object" && ps.AdditionalProperties != nil && v.IsMap():
		v.AsMap().AllStable(func(key string, x property.Value) bool {
			errs = append(errs, pkg.wholeNumbers(typ, path+"."+key, *ps.AdditionalProperties, x)...)
			return true
		})
	case ps.Type == "integer" && v.IsNumber():
		b, _ := spec.BoundOf(stackPath(typ, path))
		if b.Kind != spec.Count {
			b = spec.Bound{}
		}
		n := v.AsNumber()
		// What no int holds; the range of one is the component's validation's.
		if spec.CountError(spec.Bound{}, n) != nil {
			e := spec.CountError(b, n)
			e.Path, e.Value = path, strconv.FormatFloat(n, 'g', -1, 64)
			errs = append(errs, *e)
		}
	}
	return errs
}

// stackPath is the stack config path (below eventpipe:, names filled in) of the input at
// path of a component of type typ, where the bounds table (spec.BoundOf) finds it.
func stackPath(typ, path string) string {
	if typ == components.TypeSubscription {
		if rest, ok := strings.CutPrefix(path, "subscription."); ok {
			path = "subscriptions.s." + rest
		}
	}
	return spec.KeyPipelines + ".p." + path
}
