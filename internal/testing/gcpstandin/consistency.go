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
//   - An IAM grant takes effect later still (grants.go).
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
// or was enabled less than the API propagation delay before.
func (s *standin) usable(st map[string]Record, api, project string, now time.Time) error {
	at, ok := s.enabledAt(st, api, project)
	if ok && now.Sub(at) >= s.apiPropagation {
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
