package components

import (
	"fmt"
	"slices"
	"strings"

	"github.com/eventpipe/eventpipe/alerts"
	"github.com/eventpipe/eventpipe/spec"
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
// false (a Project of RequiredAPIs, which also creates the Firestore
// databases of StackDatabases) and makes every pipeline's resources wait
// for it, declares one Pipeline per pipeline of
// s, in name order, from its validated settings, and exports each
// pipeline's topic and consumer URL.
func DeclareStack(ctx *pulumi.Context, s *Stack) error {
	var ready pulumi.StringArrayInput
	if dbs := StackDatabases(s.Spec); ManagesAPIs(s.Spec) || len(dbs) > 0 {
		setup := s.Spec.Setup
		pr, err := NewProject(ctx, "apis", &ProjectArgs{
			Project:            pulumi.String(s.Spec.Project),
			ManageApis:         s.Spec.ManageAPIs,
			Apis:               RequiredAPIs(s.Spec),
			FirestoreDatabases: dbs,
			Setup:              &setup,
			Protect:            s.Spec.Defaults.Protect,
		})
		if err != nil {
			return err
		}
		ready = pr.Apis
	}
	for _, p := range s.Spec.SortedPipelines() {
		// A copy: a secret store becomes the consumer's storeSecret, which
		// goes to Secret Manager (the URL may carry a password).
		pc := *p
		if k := &pc.Consumer; s.Spec.StoreSecret && k.Store == s.Spec.Store {
			k.Store, k.StoreSecret = spec.OfflineSecret, pulumi.ToSecret(pulumi.String(k.Store)).(pulumi.StringOutput)
		}
		sc := &scope{stack: s.Spec, pipeline: &pc, d: &deferrals{}, project: pulumi.String(s.Spec.Project),
			projectNumber: pulumi.String(s.Spec.ProjectNumber), inPipeline: true, ready: ready}
		var opts []pulumi.ResourceOption
		if ready != nil {
			opts = append(opts, awaitAPIs(ready))
		}
		pl, err := declarePipeline(ctx, p.Name, sc, nil, s.Thresholds, opts)
		if err != nil {
			return fmt.Errorf("pipeline %s: %w", p.Name, err)
		}
		ctx.Export(p.Name+".topic", pl.TopicName)
		ctx.Export(p.Name+".consumerUri", pl.ConsumerURI)
	}
	return nil
}

// StackDatabases are the Firestore databases the stack creates: with
// eventpipe:setup.firestoreLocation set, every database a pipeline's
// Firestore store names in the stack's project, sorted.
func StackDatabases(st *spec.Stack) []string {
	if st.Setup.FirestoreLocation == "" {
		return nil
	}
	dbs := map[string]bool{}
	for _, p := range st.SortedPipelines() {
		if project, db, ok := p.Consumer.FirestoreDatabase(); ok && project == st.Project {
			dbs[db] = true
		}
	}
	return spec.SortedKeys(dbs)
}
