package components

import (
	"fmt"
	"slices"
	"strings"

	"github.com/eventpipe/eventpipe/alerts"
	"github.com/eventpipe/eventpipe/spec"
	"github.com/pulumi/pulumi-gcp/sdk/v8/go/gcp/projects"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// Stack is a validated stack config (stacks/Pulumi.<stack>.yaml), ready to
// declare.
type Stack struct {
	// Spec is the validated stack config, every default filled.
	Spec *spec.Stack
	// Thresholds are the stack's alert thresholds: eventpipe:alerts.thresholds
	// over the defaults.
	Thresholds alerts.Config
}

// LoadStack reads the config of stack from src and validates it, with the
// alert thresholds (read with the alerts package's own types and rules) and
// what a consumer needs on Cloud Run (deployProblems); every problem of the
// whole config is reported at once as spec.Errors, on its config path.
func LoadStack(stack string, src spec.Source) (*Stack, error) {
	st, errs := spec.Read(stack, src)
	thresholds := alerts.Defaults()
	if st != nil && st.Alerts.Thresholds != nil {
		path := spec.Namespace + ":" + spec.KeyAlerts + ".thresholds"
		decodeErrs := spec.Decode(path, st.Alerts.Thresholds, &thresholds)
		errs = append(errs, decodeErrs...)
		if len(decodeErrs) == 0 {
			errs = append(errs, thresholdErrors(path+".", thresholds.Validate())...)
		}
	}
	if st != nil {
		for _, p := range st.SortedPipelines() {
			if p != nil {
				errs = append(errs, deployProblems(st, p)...)
			}
		}
	}
	if len(errs) > 0 {
		slices.SortStableFunc(errs, func(a, b spec.FieldError) int { return strings.Compare(a.Path, b.Path) })
		return nil, errs
	}
	return &Stack{Spec: st, Thresholds: thresholds.WithDefaults()}, nil
}

// DeclareStack enables the stack's APIs unless eventpipe:manageApis is
// false (EnableAPIs, RequiredAPIs), declares one Pipeline per pipeline of
// s, in name order, from its validated settings, and exports each
// pipeline's topic and consumer URL.
func DeclareStack(ctx *pulumi.Context, s *Stack) error {
	var apis map[string]*projects.Service
	if ManagesAPIs(s.Spec) {
		var err error
		if apis, err = EnableAPIs(ctx, pulumi.String(s.Spec.Project), RequiredAPIs(s.Spec)); err != nil {
			return err
		}
	}
	for _, p := range s.Spec.SortedPipelines() {
		// A copy: a secret store becomes the consumer's storeSecret, which
		// goes to Secret Manager (the URL may carry a password).
		pc := *p
		if k := &pc.Consumer; s.Spec.StoreSecret && k.Store == s.Spec.Store {
			k.Store, k.StoreSecret = spec.OfflineSecret, pulumi.ToSecret(pulumi.String(k.Store)).(pulumi.StringOutput)
		}
		sc := &scope{stack: s.Spec, pipeline: &pc, d: &deferrals{}, project: pulumi.String(s.Spec.Project),
			projectNumber: pulumi.String(s.Spec.ProjectNumber), inPipeline: true, apis: apis}
		pl, err := declarePipeline(ctx, p.Name, sc, nil, s.Thresholds, nil)
		if err != nil {
			return fmt.Errorf("pipeline %s: %w", p.Name, err)
		}
		ctx.Export(p.Name+".topic", pl.TopicName)
		ctx.Export(p.Name+".consumerUri", pl.ConsumerURI)
	}
	return nil
}
