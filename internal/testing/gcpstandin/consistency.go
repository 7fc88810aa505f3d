package gcpstandin

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Eventual consistency, as Google documents it and the provider meets it:
//
//   - Enabling an API (google_project_service's Create, resource_google_project_service.go
//     at v6.49.2) lists the project's enabled services through Service Usage and returns at
//     once when the API is on; otherwise it enables it and reads the resource back, and
//     that Read starts with Cloud Resource Manager's projects.get. Cloud Resource Manager
//     is not among the APIs a new project has (DefaultAPIs), so enabling it from a stack
//     fails on its own read-back (terraform-provider-google#6101, #11435), and an API
//     enabled beside it races it.
//   - An enabled API is usable only after "a few minutes" (the 403's own text: "If you
//     enabled this API recently, wait a few minutes for the action to propagate to our
//     systems and retry"; terraform-provider-google#2129: "even when the service usage API
//     returns that a service is enabled, it can't always be used right away"). The
//     provider's default retry predicates (transport/error_retry_predicates.go,
//     defaultErrorRetryPredicates) retry 429, 500, 502, 503 and some 409s and 400s, not
//     a 403 SERVICE_DISABLED, so the create fails.
//   - An IAM grant takes effect "typically [in] 2 minutes, potentially 7 minutes or longer"
//     (cloud.google.com/iam/docs/access-change-propagation); the provider waits only until
//     the policy it wrote reads back (tpgiamresource/iam.go, iamPolicyReadModifyWrite).
//     Cloud Run checks at deploy time that the revision's account can read the secrets
//     its environment names ("Permission denied on secret: … for Revision service account
//     …. The service account used must be granted the 'Secret Manager Secret Accessor'
//     role", terraform-google-modules/terraform-docs-samples#168) and that its service
//     agent may use a Shared VPC subnet it attaches to (cloud.google.com/run/docs/
//     configuring/shared-vpc-direct-vpc: grant roles/compute.networkUser on the shared
//     subnet).
//
// The stand-in takes the deploying identity to belong to the stack's project (the API
// checks enablement in the caller's project), as a fresh project with its own deployer
// has it.

const (
	apiResourceManager = "cloudresourcemanager.googleapis.com"
	apiServiceUsage    = "serviceusage.googleapis.com"
	// enablementType marks an API enabled in a project: it outlives the resource that
	// enabled it (disableOnDestroy false) and a failed read-back.
	enablementType = "serviceusage:enablement"
)

// apis maps a type's module to the API that serves it.
var apis = map[string]string{
	"pubsub":         "pubsub.googleapis.com",
	"cloudrunv2":     "run.googleapis.com",
	"firestore":      "firestore.googleapis.com",
	"monitoring":     "monitoring.googleapis.com",
	"logging":        "logging.googleapis.com",
	"serviceaccount": "iam.googleapis.com",
	"projects":       apiResourceManager,
	"secretmanager":  "secretmanager.googleapis.com",
	"sql":            "sqladmin.googleapis.com",
	"compute":        "compute.googleapis.com",
	"vpcaccess":      "vpcaccess.googleapis.com",
}

// API returns the API a resource type needs enabled ("" for none the stand-in knows).
func API(typ string) string {
	switch typ {
	case "gcp:projects/service:Service":
		return apiServiceUsage
	case "gcp:projects/serviceIdentity:ServiceIdentity":
		return apiServiceUsage // services.generateServiceIdentity is a Service Usage call
	}
	module, _, _ := strings.Cut(strings.TrimPrefix(typ, "gcp:"), "/")
	return apis[module]
}

func enablementKey(project, api string) string { return "enabled:" + project + "/" + api }

// enabledAt returns when api was enabled in project: the zero time for one enabled
// outside the stack, ok false for one not enabled.
func (s *standin) enabledAt(st map[string]Record, api, project string) (time.Time, bool) {
	if slices.Contains(s.enabled, "*") || slices.Contains(s.enabled, api) || slices.Contains(s.enabled, project+"/"+api) {
		return time.Time{}, true
	}
	if r, ok := st[enablementKey(project, api)]; ok {
		return r.Created, true
	}
	if project == "" {
		// A resource named by another's id (a secret version, an account's IAM
		// member) is in the project of that resource: any enablement of api.
		for _, r := range st {
			if r.Type == enablementType && r.Name == api {
				return r.Created, true
			}
		}
	}
	return time.Time{}, false
}

// usable returns the 403 the API gives a call at now when api is not enabled in project,
// or was enabled less than the propagation delay before.
func (s *standin) usable(st map[string]Record, api, project string, now time.Time) error {
	at, ok := s.enabledAt(st, api, project)
	if ok && now.Sub(at) >= s.propagation {
		return nil
	}
	number := s.projects[project]
	if number == "" {
		number = project
	}
	recently := ""
	if ok {
		recently = fmt.Sprintf(" (enabled %s ago)", now.Sub(at).Round(time.Millisecond))
	}
	return fmt.Errorf("googleapi: Error 403: %s has not been used in project %s before or it is disabled%s. "+
		"Enable it by visiting https://console.developers.google.com/apis/api/%s/overview?project=%s then retry. "+
		"If you enabled this API recently, wait a few minutes for the action to propagate to our systems and retry., "+
		"accessNotConfigured (reason SERVICE_DISABLED)", api, number, recently, api, number)
}

// enable creates rec, a gcp:projects/service:Service, the way the provider does: an API
// already on is recorded and returned; otherwise it is enabled (which stays, whatever
// follows) and read back through Cloud Resource Manager, which must be usable.
func (s *standin) enable(st map[string]Record, urn string, rec Record) error {
	api, project, now := str(rec.State, "service"), str(rec.State, "project"), rec.Created
	if err := s.usable(st, apiServiceUsage, project, now); err != nil {
		return fmt.Errorf("creating %s %q: %w", rec.Type, rec.Name, err)
	}
	if _, on := s.enabledAt(st, api, project); !on {
		st[enablementKey(project, api)] = Record{Type: enablementType, Name: api, ID: project + "/" + api, Created: now}
		if err := s.log("enable", rec.Type, rec.Name); err != nil {
			return err
		}
		if err := s.usable(st, apiResourceManager, project, now); err != nil {
			return fmt.Errorf("creating %s %q: reading project %s back after enabling %s: %w", rec.Type, rec.Name, project, api, err)
		}
	}
	st[urn] = rec
	return s.log("create", rec.Type, rec.Name)
}

// effective reports whether a grant created at created has taken effect at now.
func (s *standin) effective(created, now time.Time) bool { return now.Sub(created) >= s.propagation }

// grantedAt is granted that also requires the grant to have taken effect at now.
func (s *standin) grantedAt(st map[string]Record, typ, field, target, role, who string, now time.Time) (found, effective bool) {
	for _, r := range st {
		match := r.Type == typ && str(r.State, "role") == role && strings.Contains(str(r.State, "member"), who)
		if match {
			t := str(r.State, field)
			match = t == target || strings.HasSuffix(target, "/"+t) || strings.HasSuffix(t, "/"+target)
		}
		if !match && r.Type == "gcp:projects/iAMMember:IAMMember" && str(r.State, "role") == role && strings.Contains(str(r.State, "member"), who) {
			match = true
		}
		if match {
			found = true
			effective = effective || s.effective(r.Created, now)
		}
	}
	return found, effective
}

func (s *standin) prerequisites(st map[string]Record, rec Record) error {
	if s.noChecks {
		return nil
	}
	in := rec.State
	project := str(in, "project")
	if api := API(rec.Type); api != "" && rec.Type != "gcp:projects/service:Service" {
		if err := s.usable(st, api, project, rec.Created); err != nil {
			return err
		}
	}
	switch rec.Type {
	case "gcp:pubsub/subscription:Subscription":
		return subscriptionPrerequisites(st, in)
	case "gcp:cloudrunv2/service:Service", "gcp:cloudrunv2/workerPool:WorkerPool":
		if err := s.revisionAccess(st, in, rec.Created); err != nil {
			return err
		}
		return runPrerequisites(st, rec.Type, in)
	case "gcp:monitoring/alertPolicy:AlertPolicy":
		return alertPrerequisites(st, in, rec.Created)
	case "gcp:firestore/field:Field":
		if !s.databaseExists(st, project, str(in, "database")) {
			return fmt.Errorf("googleapi: Error 404: The database %s does not exist for project %s Please visit "+
				"https://console.cloud.google.com/datastore/setup?project=%s to add a Cloud Datastore or Cloud Firestore database.",
				str(in, "database"), project, project)
		}
	case "gcp:firestore/database:Database":
		if s.databaseExists(st, project, str(in, "name")) {
			return fmt.Errorf("googleapi: Error 409: Database already exists. Please use another database_id")
		}
	}
	return nil
}

// databaseExists reports whether the Firestore database name ("(default)" when empty)
// exists in project: made outside the stack, or by a database resource.
func (s *standin) databaseExists(st map[string]Record, project, name string) bool {
	if name == "" {
		name = "(default)"
	}
	if slices.Contains(s.databases, project+"/"+name) || (name == "(default)" && slices.Contains(s.databases, "*")) {
		return true
	}
	for _, r := range st {
		if r.Type == "gcp:firestore/database:Database" && str(r.State, "project") == project && str(r.State, "name") == name {
			return true
		}
	}
	return false
}

// revisionAccess refuses a Cloud Run service or worker pool whose revision could not
// start for want of a grant that has taken effect: a secret its account cannot read, a
// Shared VPC subnet its service agent may not use.
func (s *standin) revisionAccess(st map[string]Record, in map[string]any, now time.Time) error {
	tmpl, _ := in["template"].(map[string]any)
	account := str(tmpl, "serviceAccount")
	project := str(in, "project")
	for i, c := range list(tmpl, "containers") {
		for j, e := range list(c, "envs") {
			src, _ := e["valueSource"].(map[string]any)
			ref, _ := src["secretKeyRef"].(map[string]any)
			secret := str(ref, "secret")
			if secret == "" {
				continue
			}
			found, effective := s.grantedAt(st, "gcp:secretmanager/secretIamMember:SecretIamMember", "secretId", secret,
				"roles/secretmanager.secretAccessor", account, now)
			if !effective {
				why := "no grant"
				if found {
					why = "granted less than the propagation delay ago"
				}
				return fmt.Errorf("googleapi: Error 13: Revision is not ready and cannot serve traffic. "+
					"spec.template.spec.containers[%d].env[%d].value_from.secret_key_ref.name: Permission denied on secret: "+
					"projects/%s/secrets/%s/versions/%s for Revision service account %s (%s). The service account used must be granted "+
					"the 'Secret Manager Secret Accessor' role (roles/secretmanager.secretAccessor) at the secret, project or higher level.",
					i, j, project, secret, str(ref, "version"), account, why)
			}
		}
	}
	vpc, _ := tmpl["vpcAccess"].(map[string]any)
	for _, nic := range list(vpc, "networkInterfaces") {
		host, subnet := hostProject(str(nic, "network"), str(nic, "subnetwork"))
		if host == "" || host == project {
			continue
		}
		agent := "service-" + s.projects[project] + "@serverless-robot-prod.iam.gserviceaccount.com"
		found, effective := s.grantedAt(st, "gcp:compute/subnetworkIAMMember:SubnetworkIAMMember", "subnetwork", subnet,
			"roles/compute.networkUser", agent, now)
		if !effective {
			why := "no grant"
			if found {
				why = "granted less than the propagation delay ago"
			}
			return fmt.Errorf("googleapi: Error 403: the Cloud Run service agent %s lacks compute.subnetworks.use on Shared VPC subnetwork %s "+
				"of host project %s (%s): grant it roles/compute.networkUser on the subnet", agent, subnet, host, why)
		}
	}
	return nil
}

// hostProject returns the project a Direct VPC egress interface's network or subnetwork
// names (projects/HOST/…), "" for a bare name (the service's own project), and the
// subnetwork's name.
func hostProject(network, subnetwork string) (host, subnet string) {
	for _, ref := range []string{subnetwork, network} {
		if rest, ok := strings.CutPrefix(ref, "projects/"); ok {
			host, _, _ = strings.Cut(rest, "/")
			break
		}
	}
	subnet = subnetwork
	if subnet == "" {
		subnet = network
	}
	return host, subnet[strings.LastIndex(subnet, "/")+1:]
}
