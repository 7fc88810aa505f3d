package components

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/eventpipe/eventpipe/spec"
	"github.com/pulumi/pulumi-gcp/sdk/v8/go/gcp/firestore"
	"github.com/pulumi/pulumi-gcp/sdk/v8/go/gcp/projects"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// TypeProject is the token of the Project component.
const TypeProject = "eventpipe:index:Project"

// The wait between an enablement or a grant and what needs it is a time_sleep of the
// pulumiverse time provider (its type token, version and where the engine fetches its
// plugin, from the provider's schema and Go SDK metadata): a real resource that waits
// only when it is created, or replaced because its triggers changed, so the `up` after
// the first waits for nothing. The gcp provider has no wait of its own: it does not
// retry the 403 an API gives while its enablement propagates, nor a call a grant does
// not yet allow (transport/error_retry_predicates.go of terraform-provider-google-beta
// v6.49.2), which is why Terraform users put a time_sleep there
// (hashicorp/terraform-provider-google#2129, #8214).
const (
	SleepType       = "time:index/sleep:Sleep"
	TimeVersion     = "0.1.1"
	TimePluginURL   = "github://api.github.com/pulumiverse/pulumi-time"
	firestoreNative = "FIRESTORE_NATIVE"
)

// APIServiceUsage is the Service Usage API, through which every other is enabled.
const APIServiceUsage = "serviceusage.googleapis.com"

// DefaultAPIs are the APIs a Project enables when none are given: what a pipeline with
// the defaults uses (a Firestore store in the project, alerts).
var DefaultAPIs = []string{APIPubSub, APIRun, APIIAM, APIResourceManager, APIFirestore, APILogging, APIMonitoring}

// ProjectArgs configure a Project.
type ProjectArgs struct {
	// Project is the GCP project id.
	Project pulumi.StringInput `pulumi:"project"`
	// ManageApis enables the APIs (default true); false where an organisation enables them centrally.
	ManageApis *bool `pulumi:"manageApis,optional"`
	// Apis are the Google Cloud APIs to enable (default: pubsub, run, iam, cloudresourcemanager, firestore,
	// logging and monitoring, what a pipeline with a Firestore store and alerts uses). Service Usage and
	// Cloud Resource Manager are enabled first in any case: the provider reads every enablement back through
	// Cloud Resource Manager.
	Apis []string `pulumi:"apis,optional"`
	// FirestoreDatabases are the ids of Firestore databases to create ("(default)" for the project's
	// default one), in setup.firestoreLocation.
	FirestoreDatabases []string `pulumi:"firestoreDatabases,optional"`
	// Setup sets the wait after enabling (apiPropagation) and the Firestore databases' location.
	Setup *spec.Setup `pulumi:"setup,optional"`
	// Protect puts Pulumi's protect on the Firestore databases (default true): deleting one deletes its data.
	Protect *bool `pulumi:"protect,optional"`
}

// Project is what a project needs before pipelines can be declared in it: the Google
// Cloud APIs enabled, Service Usage and Cloud Resource Manager first and every other
// after them, a wait (a time_sleep of setup.apiPropagation) for the enablements to
// propagate, and optionally the Firestore databases. Its apis output resolves once all
// of that is done: pass it as the apis argument of a Pipeline (or Topic, Subscription,
// Consumer, FirestoreTTL), and every resource the component declares waits for it.
type Project struct {
	pulumi.ResourceState

	// Apis are the APIs enabled, known once they have propagated and the databases exist; pass it as
	// the other components' apis argument.
	Apis pulumi.StringArrayOutput `pulumi:"apis"`

	// Services are the enabled APIs by name (none when manageApis is false).
	Services map[string]*projects.Service
	// Databases are the Firestore databases created, by id.
	Databases map[string]*firestore.Database
}

// NewProject validates args and declares the Project name.
func NewProject(ctx *pulumi.Context, name string, args *ProjectArgs, opts ...pulumi.ResourceOption) (_ *Project, err error) {
	defer declaredAt(calledAt(), &err)
	if args == nil || args.Project == nil {
		return nil, fmt.Errorf("project %s: no project; set project to the GCP project id", name)
	}
	setup := spec.Setup{}
	if args.Setup != nil {
		setup = *args.Setup
	}
	problems := spec.ValidateSetup("setup", &setup)
	apis := args.Apis
	if apis == nil {
		apis = DefaultAPIs
	}
	for i, api := range apis {
		if !strings.HasSuffix(api, ".googleapis.com") || strings.ContainsAny(api, " /") {
			problems = append(problems, spec.FieldError{Path: fmt.Sprintf("apis[%d]", i), Value: fmt.Sprintf("%q", api),
				Allowed: "a Google Cloud API's service name", Fix: "write it as gcloud services list shows it, e.g. pubsub.googleapis.com"})
		}
	}
	if len(args.FirestoreDatabases) > 0 && setup.FirestoreLocation == "" {
		problems = append(problems, spec.FieldError{Path: "setup.firestoreLocation", Value: `""`,
			Allowed: "a Firestore location when firestoreDatabases is set", Fix: "set setup.firestoreLocation, e.g. eur3 or europe-west1"})
	}
	if len(problems) > 0 {
		return nil, argsError("project", name, problems)
	}
	pr := &Project{Services: map[string]*projects.Service{}, Databases: map[string]*firestore.Database{}}
	if err := register(ctx, TypeProject, name, pr, opts); err != nil {
		return nil, fmt.Errorf("register project component %s: %w", name, err)
	}
	parent := pulumi.Parent(pr)
	apiWait, _ := setup.Waits()
	var ready []pulumi.Resource
	enabled := []string{}
	if args.ManageApis == nil || *args.ManageApis {
		services, err := enableAPIs(ctx, pr, args.Project, apis)
		if err != nil {
			return nil, err
		}
		pr.Services = services
		enabled = slices.Sorted(func(yield func(string) bool) {
			for api := range services {
				if !yield(api) {
					return
				}
			}
		})
		all := make([]pulumi.Resource, 0, len(services))
		for _, api := range enabled {
			all = append(all, services[api])
		}
		ready = all
		if apiWait > 0 {
			wait, err := declareSleep(ctx, name+"-apis-propagated", apiWait, pulumi.StringMap{"apis": pulumi.String(strings.Join(enabled, ","))},
				parent, pulumi.DependsOn(all))
			if err != nil {
				return nil, fmt.Errorf("project %s: %w", name, err)
			}
			ready = []pulumi.Resource{wait}
		}
	}
	protect := args.Protect == nil || *args.Protect
	for _, db := range args.FirestoreDatabases {
		res := name + "-firestore-" + strings.Trim(strings.NewReplacer("(", "", ")", "").Replace(db), "-")
		d, err := firestore.NewDatabase(ctx, res, &firestore.DatabaseArgs{
			Project:    args.Project,
			Name:       pulumi.String(db),
			LocationId: pulumi.String(setup.FirestoreLocation),
			Type:       pulumi.String(firestoreNative),
			// The database holds the consumers' records: a destroy leaves it (and
			// protect refuses one that would delete it).
			DeletionPolicy: pulumi.String("ABANDON"),
		}, parent, pulumi.Protect(protect), pulumi.DependsOn(ready))
		if err != nil {
			return nil, fmt.Errorf("declare Firestore database %s: %w", db, err)
		}
		pr.Databases[db] = d
	}
	deps := slices.Clone(ready)
	for _, db := range slices.Sorted(func(yield func(string) bool) {
		for k := range pr.Databases {
			if !yield(k) {
				return
			}
		}
	}) {
		deps = append(deps, pr.Databases[db])
	}
	pr.Apis = after(deps, enabled)
	if err := ctx.RegisterResourceOutputs(pr, pulumi.Map{"apis": pr.Apis}); err != nil {
		return nil, fmt.Errorf("register project outputs %s: %w", name, err)
	}
	return pr, nil
}

// enableAPIs declares a projects.Service for Service Usage and Cloud Resource Manager,
// then one for each other API of apis, waiting for those two: enabling an API reads the
// project back through Cloud Resource Manager. Each is named api-SERVICE (with an alias
// to the same name at the stack's root, where stacks before this release declared it)
// and left enabled on destroy: other workloads of the project may use it.
func enableAPIs(ctx *pulumi.Context, pr *Project, project pulumi.StringInput, apis []string) (map[string]*projects.Service, error) {
	services := map[string]*projects.Service{}
	enable := func(api string, deps []pulumi.Resource) error {
		svc, err := projects.NewService(ctx, "api-"+strings.TrimSuffix(api, ".googleapis.com"), &projects.ServiceArgs{
			Project:                  project,
			Service:                  pulumi.String(api),
			DisableOnDestroy:         pulumi.Bool(false),
			DisableDependentServices: pulumi.Bool(false),
		}, pulumi.Parent(pr), pulumi.DependsOn(deps), pulumi.Aliases([]pulumi.Alias{{NoParent: pulumi.Bool(true)}}))
		if err != nil {
			return fmt.Errorf("enable API %s: %w", api, err)
		}
		services[api] = svc
		return nil
	}
	first := []string{APIServiceUsage, APIResourceManager}
	for _, api := range first {
		if err := enable(api, nil); err != nil {
			return nil, err
		}
	}
	before := []pulumi.Resource{services[APIServiceUsage], services[APIResourceManager]}
	for _, api := range spec.SortedKeys(setOf(apis)) {
		if slices.Contains(first, api) {
			continue
		}
		if err := enable(api, before); err != nil {
			return nil, err
		}
	}
	return services, nil
}

func setOf(list []string) map[string]bool {
	out := make(map[string]bool, len(list))
	for _, s := range list {
		out[s] = true
	}
	return out
}

// after is value as an output that depends on deps: known once they are created.
func after(deps []pulumi.Resource, value []string) pulumi.StringArrayOutput {
	ids := make([]any, 0, len(deps))
	for _, d := range deps {
		if c, ok := d.(pulumi.CustomResource); ok {
			ids = append(ids, c.ID())
		}
	}
	if len(ids) == 0 {
		return pulumi.ToStringArray(value).ToStringArrayOutput()
	}
	return pulumi.All(ids...).ApplyT(func([]any) []string { return value }).(pulumi.StringArrayOutput)
}

// Sleep is a time_sleep of the pulumiverse time provider (see SleepType).
type Sleep struct {
	pulumi.CustomResourceState
}

// declareSleep declares a time_sleep that waits d when it is created and whenever
// triggers change.
func declareSleep(ctx *pulumi.Context, name string, d time.Duration, triggers pulumi.StringMapInput, opts ...pulumi.ResourceOption) (*Sleep, error) {
	s := &Sleep{}
	opts = append(slices.Clip(opts), pulumi.Version(TimeVersion), pulumi.PluginDownloadURL(TimePluginURL))
	err := ctx.RegisterResource(SleepType, name, pulumi.Map{
		"createDuration": pulumi.String(d.String()),
		"triggers":       triggers,
	}, s, opts...)
	if err != nil {
		return nil, fmt.Errorf("declare wait %s: %w", name, err)
	}
	return s, nil
}

// waitForGrants declares NAME-grants-propagated, a wait of d after grants (a time_sleep
// whose triggers are their ids: it waits again when a grant is replaced or added), and
// returns what the resource relying on the grants must depend on: the wait, or the
// grants themselves when d is 0 or there are none.
func waitForGrants(ctx *pulumi.Context, name string, d time.Duration, grants []pulumi.Resource, opts ...pulumi.ResourceOption) ([]pulumi.Resource, error) {
	if d == 0 || len(grants) == 0 {
		return grants, nil
	}
	ids := make([]any, 0, len(grants))
	for _, g := range grants {
		if c, ok := g.(pulumi.CustomResource); ok {
			ids = append(ids, c.ID())
		}
	}
	joined := pulumi.All(ids...).ApplyT(func(v []any) string {
		out := make([]string, len(v))
		for i, id := range v {
			out[i] = fmt.Sprint(id)
		}
		return strings.Join(out, ",")
	}).(pulumi.StringOutput)
	sleep, err := declareSleep(ctx, name+"-grants-propagated", d, pulumi.StringMap{"grants": joined},
		append(slices.Clip(opts), pulumi.DependsOn(grants))...)
	if err != nil {
		return nil, err
	}
	return []pulumi.Resource{sleep}, nil
}

// awaitAPIs is the resource option of a component whose resources wait for apis (a
// Project's apis output): every Google Cloud resource it declares depends on it.
func awaitAPIs(apis pulumi.StringArrayInput) pulumi.ResourceOption {
	return pulumi.Transformations([]pulumi.ResourceTransformation{awaitTransformation(apis)})
}

// awaitTransformation makes every custom gcp resource wait for apis.
func awaitTransformation(apis pulumi.StringArrayInput) pulumi.ResourceTransformation {
	return func(args *pulumi.ResourceTransformationArgs) *pulumi.ResourceTransformationResult {
		if _, custom := args.Resource.(pulumi.CustomResource); !custom || !strings.HasPrefix(args.Type, "gcp:") {
			return nil
		}
		return &pulumi.ResourceTransformationResult{
			Props: args.Props,
			Opts:  append(slices.Clip(args.Opts), pulumi.DependsOnInputs(waitFor(apis))),
		}
	}
}

// waitFor is apis as a dependency: no resources of its own, the output's dependencies.
func waitFor(apis pulumi.StringArrayInput) pulumi.ResourceArrayOutput {
	return apis.ToStringArrayOutput().ApplyT(func([]string) []pulumi.Resource { return nil }).(pulumi.ResourceArrayOutput)
}

// withAPIs is opts with the resources of the component waiting for apis, when set.
func withAPIs(opts []pulumi.ResourceOption, apis pulumi.StringArrayInput) []pulumi.ResourceOption {
	if apis == nil {
		return opts
	}
	return append(slices.Clip(opts), awaitAPIs(apis))
}
