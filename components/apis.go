package components

import (
	"fmt"

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

// EnableAPIs enables apis in project, Service Usage and Cloud Resource Manager first
// (a Project named "apis", its services named api-SERVICE, left enabled on destroy:
// other workloads of the project may use them), waits the default API propagation for
// the enablements to take effect, and makes every Google Cloud resource the program
// declares afterwards wait for that. Call it before declaring the resources, once per
// program. It returns the services by API. (NewProject does the same for a
// program that passes its apis output to the components instead.)
func EnableAPIs(ctx *pulumi.Context, project pulumi.StringInput, apis []string) (map[string]*projects.Service, error) {
	pr, err := NewProject(ctx, "apis", &ProjectArgs{Project: project, Apis: apis})
	if err != nil {
		return nil, err
	}
	if err := ctx.RegisterStackTransformation(awaitTransformation(pr.Apis)); err != nil {
		return nil, fmt.Errorf("make resources wait for their APIs: %w", err)
	}
	return pr.Services, nil
}
