package components

import (
	"fmt"
	"slices"
	"strings"

	"github.com/eventpipe/eventpipe/spec"
	"github.com/pulumi/pulumi-gcp/sdk/v8/go/gcp/projects"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// The Google Cloud APIs eventpipe's resources and consumers use.
const (
	APIPubSub          = "pubsub.googleapis.com"
	APIRun             = "run.googleapis.com"
	APIIAM             = "iam.googleapis.com"
	APIResourceManager = "cloudresourcemanager.googleapis.com"
	APIFirestore       = "firestore.googleapis.com"
	APIMonitoring      = "monitoring.googleapis.com"
	APILogging         = "logging.googleapis.com"
	APITrace           = "cloudtrace.googleapis.com"
	APISecretManager   = "secretmanager.googleapis.com"
	APISQLAdmin        = "sqladmin.googleapis.com"
	APICompute         = "compute.googleapis.com"
)

// apiOfType is the API that serves resources of type token typ (a
// pulumi-gcp type such as gcp:pubsub/topic:Topic), ok false for a type
// eventpipe does not declare. Project IAM members go through the Cloud
// Resource Manager API, without which they fail with 403.
func apiOfType(typ string) (api string, ok bool) {
	module, _, _ := strings.Cut(strings.TrimPrefix(typ, "gcp:"), "/")
	switch {
	case !strings.HasPrefix(typ, "gcp:"):
		return "", false
	case typ == "gcp:projects/iAMMember:IAMMember":
		return APIResourceManager, true
	case typ == "gcp:projects/serviceIdentity:ServiceIdentity":
		// eventpipe asks only for the Pub/Sub service agent.
		return APIPubSub, true
	}
	api, ok = map[string]string{
		"pubsub":         APIPubSub,
		"cloudrunv2":     APIRun,
		"serviceaccount": APIIAM,
		"firestore":      APIFirestore,
		"logging":        APILogging,
		"monitoring":     APIMonitoring,
		"secretmanager":  APISecretManager,
	}[module]
	return api, ok
}

// RequiredAPIs are the APIs the stack st uses in its project, sorted: the
// ones its resources are served by (Pub/Sub, Cloud Run, IAM, Cloud
// Resource Manager; Firestore for a Firestore store in the project;
// Logging and Monitoring for alerts; Secret Manager for a secret store)
// and the ones its consumers need at run time (Cloud Trace with the
// collector, the Cloud SQL Admin API for Cloud SQL connections, Compute
// Engine for Direct VPC egress). st must be validated.
func RequiredAPIs(st *spec.Stack) []string {
	apis := map[string]bool{APIPubSub: true, APIRun: true, APIIAM: true, APIResourceManager: true}
	if st.Traced() {
		apis[APITrace] = true
	}
	for _, p := range st.SortedPipelines() {
		k := &p.Consumer
		if project, _, ok := k.FirestoreDatabase(); ok && project == st.Project {
			apis[APIFirestore] = true
		}
		if p.Alerts.Enabled() {
			apis[APILogging], apis[APIMonitoring] = true, true
		}
		if st.StoreSecret && k.Store == st.Store {
			apis[APISecretManager] = true
		}
		if len(k.CloudSQLInstances) > 0 {
			apis[APISQLAdmin] = true
		}
		if k.VPCAccess != nil {
			apis[APICompute] = true
		}
	}
	return spec.SortedKeys(apis)
}

// ManagesAPIs reports whether the stack enables its APIs (eventpipe:manageApis,
// default true).
func ManagesAPIs(st *spec.Stack) bool { return st.ManageAPIs == nil || *st.ManageAPIs }

// EnableAPIs enables apis in project (a projects.Service each, named
// api-SERVICE, left enabled on destroy: other workloads of the project may
// use them) and makes every resource the program declares afterwards wait
// for the API that serves it; Cloud Run services wait for every one of
// apis, because their consumers call them at run time. Call it before
// declaring the resources, once per program. It returns the services by API.
func EnableAPIs(ctx *pulumi.Context, project pulumi.StringInput, apis []string) (map[string]*projects.Service, error) {
	services := map[string]*projects.Service{}
	all := make([]pulumi.Resource, 0, len(apis))
	for _, api := range apis {
		svc, err := projects.NewService(ctx, "api-"+strings.TrimSuffix(api, ".googleapis.com"), &projects.ServiceArgs{
			Project:                  project,
			Service:                  pulumi.String(api),
			DisableOnDestroy:         pulumi.Bool(false),
			DisableDependentServices: pulumi.Bool(false),
		})
		if err != nil {
			return nil, fmt.Errorf("enable API %s: %w", api, err)
		}
		services[api] = svc
		all = append(all, svc)
	}
	err := ctx.RegisterStackTransformation(func(args *pulumi.ResourceTransformationArgs) *pulumi.ResourceTransformationResult {
		if _, custom := args.Resource.(pulumi.CustomResource); !custom {
			return nil
		}
		var waits []pulumi.Resource
		if args.Type == "gcp:cloudrunv2/service:Service" || args.Type == "gcp:cloudrunv2/workerPool:WorkerPool" {
			waits = all
		} else if api, ok := apiOfType(args.Type); ok && services[api] != nil {
			waits = []pulumi.Resource{services[api]}
		}
		if len(waits) == 0 {
			return nil
		}
		return &pulumi.ResourceTransformationResult{
			Props: args.Props,
			Opts:  append(slices.Clip(args.Opts), pulumi.DependsOn(waits)),
		}
	})
	if err != nil {
		return nil, fmt.Errorf("make resources wait for their APIs: %w", err)
	}
	return services, nil
}
