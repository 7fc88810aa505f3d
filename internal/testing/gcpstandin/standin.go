// Package gcpstandin is a stand-in for the Pulumi `gcp` provider plugin (pulumi-gcp
// v8.41.1, which bridges terraform-provider-google-beta v6.49.2), for tests only: the
// real plugin cannot be had here and Google Cloud is out of reach. Under the real Pulumi
// engine it keeps each resource's state as the API reports it after create (readback.go:
// the inputs with what the API fills in or normalises, and a preview compares the next
// inputs with that state as the bridged provider does), with the identifiers and
// computed outputs Google Cloud gives (the offline renderer's, render.Mocks), replaces a
// resource when an immutable field changes, and refuses what the real APIs refuse on a
// first and a second `pulumi up`:
//
//   - a resource whose API is not enabled (gcp:projects/service:Service) in its project,
//     or was enabled less than the API propagation delay (EnvAPIPropagation) ago: the 403
//     SERVICE_DISABLED the API gives ("If you enabled this API recently, wait a few
//     minutes for the action to propagate to our systems and retry"), which the provider
//     does not retry (consistency.go);
//   - enabling an API reads the project back through Cloud Resource Manager, whose API
//     must then be enabled and propagated (the read of enabling Cloud Resource Manager
//     itself included); an API already enabled is not read back;
//   - a create that relies on an IAM grant that does not exist or was made less than the
//     grant propagation delay (EnvGrantPropagation) ago: a Cloud Run revision's secrets,
//     Shared VPC subnet, Cloud SQL connection, Firestore store, Cloud Trace export,
//     pulled subscriptions and their dead-lettering; a push subscription's invoker, push
//     tokens and dead-letter topic; each with what Google Cloud does then, at the create
//     or after it (grants.go);
//   - a Firestore field (a TTL policy) in a database that does not exist (EnvFirestoreDatabases
//     lists the ones made outside the stack), and a database created twice;
//   - a subscription whose topic or dead-letter topic does not exist, or whose dead-letter
//     topic has no roles/pubsub.publisher grant for the Pub/Sub service agent, or whose
//     push endpoint is a Cloud Run service that does not exist;
//   - a Cloud Run service or worker pool that pulls (EVENTPIPE_PULL_SUBSCRIPTIONS) from a
//     subscription that does not exist;
//   - a Cloud Run revision template with unnamed or duplicate containers beside others,
//     a service's without exactly one ingress container (ports) among several, a
//     container depending on one the template does not have or, in a service, on one
//     without a startup probe (dependsOn waits for the named containers' startup
//     probes), a startup probe longer than 240 s (failureThreshold × periodSeconds) or
//     with periodSeconds below timeoutSeconds, an HTTP or TCP probe without a port on a
//     container that has none (the port defaults to the container's own), and a worker
//     pool container with ports or probes, which pulumi-gcp v8's worker pool has no
//     field for (Cloud Run's API took worker pool probes later, pulumi-gcp v9 has them);
//   - a Cloud Run service or worker pool whose store (EVENTPIPE_STORE, plain or from a
//     secret version) is on a private address without VPC egress, or behind a Cloud SQL
//     socket whose instance is not mounted;
//   - an alert policy that names a log-based metric that does not exist, or that was
//     created less than ten minutes before without disableMetricValidation
//     (terraform-provider-google#11102), on the stand-ins' clock;
//   - creating a resource whose identifier exists already (409), and deleting a Cloud Run
//     service, job or worker pool whose deletionProtection is not false.
//
// TimeProvider (timesleep.go) stands in for the `time` plugin's time_sleep, the wait
// eventpipe puts between an enablement or a grant and what needs it propagated. Every
// delay is judged on the stand-ins' clock (clock.go), which a time_sleep moves forward
// instead of waiting: the stand-in takes Google's delays by default, and a test waits
// for none of them in real time.
//
// State lives in a folder (EnvDir) so that each command's provider process sees what the
// previous ones created; every operation is appended to its ops.log, so tests can assert
// the order in which the engine created things.
package gcpstandin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/eventpipe/eventpipe/consumer/settings"
	"github.com/eventpipe/eventpipe/render"
	p "github.com/pulumi/pulumi-go-provider"
	presource "github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/property"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// Version is the pulumi-gcp version the stand-in reports.
const Version = "8.41.1"

// Environment of the plugin process.
const (
	// EnvDir names the folder holding the stand-in's state and ops.log (required).
	EnvDir = "EVENTPIPE_GCP_STANDIN_DIR"
	// EnvEnabledAPIs lists, comma-separated, APIs enabled outside the stack in every
	// project (API) or in one (PROJECT/API); "*": all. Unset, a project has the APIs
	// Google enables in every project created with the console or gcloud (DefaultAPIs).
	EnvEnabledAPIs = "EVENTPIPE_GCP_STANDIN_ENABLED_APIS"
	// EnvProjects lists the projects that exist, comma-separated PROJECT=NUMBER pairs:
	// gcp:organizations/getProject answers with their numbers and refuses the others.
	EnvProjects = "EVENTPIPE_GCP_STANDIN_PROJECTS"
	// EnvAPIPropagation is how long an API enablement takes to take effect, and
	// EnvGrantPropagation how long an IAM grant does (Go durations; defaults
	// DefaultAPIPropagation and DefaultGrantPropagation, Google's figures), on the
	// stand-ins' clock (clock.go), which time_sleep moves forward instead of waiting.
	EnvAPIPropagation   = "EVENTPIPE_GCP_STANDIN_API_PROPAGATION"
	EnvGrantPropagation = "EVENTPIPE_GCP_STANDIN_GRANT_PROPAGATION"
	// EnvFirestoreDatabases lists, comma-separated, Firestore databases made outside the
	// stack, as PROJECT/DATABASE ("*": every project has a (default) database).
	EnvFirestoreDatabases = "EVENTPIPE_GCP_STANDIN_FIRESTORE_DATABASES"
	// EnvNoChecks, set to "true", turns off what the stand-in refuses beyond a 409: a
	// stack deployed that way is one its owners got up by hand, however they did (the
	// upgrade test deploys the last release's stacks so, some of which no `up` could
	// bring up).
	EnvNoChecks = "EVENTPIPE_GCP_STANDIN_NO_CHECKS"
)

// DefaultAPIs are the APIs Google enables in a project created with the Google Cloud
// console or gcloud (cloud.google.com/service-usage/docs/enabled-service, "Services
// enabled by default"; the ones eventpipe's stacks name): Cloud Resource Manager is not
// among them.
var DefaultAPIs = []string{
	"bigquery.googleapis.com", "bigquerystorage.googleapis.com", "cloudapis.googleapis.com",
	"clouddebugger.googleapis.com", "cloudtrace.googleapis.com", "datastore.googleapis.com",
	"logging.googleapis.com", "monitoring.googleapis.com", "servicemanagement.googleapis.com",
	"serviceusage.googleapis.com", "sql-component.googleapis.com", "storage-api.googleapis.com",
	"storage-component.googleapis.com", "storage.googleapis.com",
}

// OpsLog is the file in EnvDir to which every operation is appended: "create TYPE NAME".
const OpsLog = "ops.log"

const stateFile = "state.json"

// Record is one resource the stand-in holds.
type Record struct {
	Type string `json:"type"`
	Name string `json:"name"`
	ID   string `json:"id"`
	// State is the resource as the API reports it (readBack of its inputs).
	State   map[string]any `json:"state"`
	Created time.Time      `json:"created"`
}

// Provider returns the stand-in provider keeping its state in dir.
func Provider(dir string) p.Provider {
	s := newStandin(dir)
	return p.Provider{
		GetSchema: func(context.Context, p.GetSchemaRequest) (p.GetSchemaResponse, error) {
			return p.GetSchemaResponse{Schema: fmt.Sprintf(`{"name":"gcp","version":%q}`, Version)}, nil
		},
		CheckConfig: func(_ context.Context, req p.CheckRequest) (p.CheckResponse, error) {
			return p.CheckResponse{Inputs: req.Inputs}, nil
		},
		DiffConfig: func(context.Context, p.DiffRequest) (p.DiffResponse, error) { return p.DiffResponse{}, nil },
		Configure:  func(context.Context, p.ConfigureRequest) error { return nil },
		Check: func(_ context.Context, req p.CheckRequest) (p.CheckResponse, error) {
			return p.CheckResponse{Inputs: req.Inputs}, nil
		},
		Invoke: s.invoke,
		Diff:   s.diff,
		Create: s.create,
		Read: func(_ context.Context, req p.ReadRequest) (p.ReadResponse, error) {
			return p.ReadResponse{ID: req.ID, Properties: req.Properties, Inputs: req.Inputs}, nil
		},
		Update: s.update,
		Delete: s.delete,
	}
}

type standin struct {
	dir      string
	enabled  []string
	projects map[string]string // project id: number
	// apiPropagation and grantPropagation are how long an enablement and a grant take
	// to take effect.
	apiPropagation, grantPropagation time.Duration
	databases                        []string
	noChecks                         bool
}

func newStandin(dir string) *standin {
	s := &standin{dir: dir, enabled: DefaultAPIs, projects: map[string]string{},
		apiPropagation: DefaultAPIPropagation, grantPropagation: DefaultGrantPropagation}
	if v, ok := os.LookupEnv(EnvEnabledAPIs); ok {
		s.enabled = strings.Split(v, ",")
	}
	for pair := range strings.SplitSeq(os.Getenv(EnvProjects), ",") {
		if project, number, ok := strings.Cut(pair, "="); ok {
			s.projects[project] = number
		}
	}
	if d, err := time.ParseDuration(os.Getenv(EnvAPIPropagation)); err == nil {
		s.apiPropagation = d
	}
	if d, err := time.ParseDuration(os.Getenv(EnvGrantPropagation)); err == nil {
		s.grantPropagation = d
	}
	if v := os.Getenv(EnvFirestoreDatabases); v != "" {
		s.databases = strings.Split(v, ",")
	}
	s.noChecks = os.Getenv(EnvNoChecks) == "true"
	return s
}

// invoke answers gcp:organizations/getProject from EnvProjects, as the Resource Manager
// API answers it, once that API is enabled and propagated; the stand-in knows no other
// function.
func (s *standin) invoke(_ context.Context, req p.InvokeRequest) (p.InvokeResponse, error) {
	if req.Token != "gcp:organizations/getProject:getProject" {
		return p.InvokeResponse{}, fmt.Errorf("the gcp stand-in does not implement %s", req.Token)
	}
	project := str(plain(req.Args), "projectId")
	st, err := readAll(s.dir)
	if err != nil {
		return p.InvokeResponse{}, err
	}
	now, err := Now(s.dir)
	if err != nil {
		return p.InvokeResponse{}, err
	}
	if err := s.usable(st, apiResourceManager, project, now); err != nil {
		return p.InvokeResponse{}, err
	}
	number, ok := s.projects[project]
	if !ok {
		return p.InvokeResponse{}, fmt.Errorf("googleapi: Error 403: The caller does not have permission, or project %q does not exist", project)
	}
	return p.InvokeResponse{Return: property.NewMap(map[string]property.Value{
		"projectId": property.New(project),
		"number":    property.New(number),
		"id":        property.New("projects/" + project),
		"name":      property.New(project),
	})}, nil
}

// immutable lists, per type, the inputs whose change replaces the resource (ForceNew in
// terraform-provider-google); every type also replaces on project and name.
var immutable = map[string][]string{
	"gcp:pubsub/subscription:Subscription":          {"topic", "filter", "enableMessageOrdering"},
	"gcp:cloudrunv2/service:Service":                {"location"},
	"gcp:cloudrunv2/workerPool:WorkerPool":          {"location"},
	"gcp:serviceaccount/account:Account":            {"accountId"},
	"gcp:secretmanager/secret:Secret":               {"secretId", "replication"},
	"gcp:secretmanager/secretVersion:SecretVersion": {"secret", "secretData"},
	"gcp:firestore/field:Field":                     {"database", "collection", "field"},
	"gcp:firestore/database:Database":               {"locationId", "type"},
	"gcp:projects/service:Service":                  {"service"},
}

// idempotent reports whether creating a resource of typ that exists already succeeds, as
// enabling an enabled API, generating an existing service identity or granting a granted
// role do.
func idempotent(typ string) bool {
	return typ == "gcp:projects/service:Service" || typ == "gcp:projects/serviceIdentity:ServiceIdentity" ||
		strings.Contains(strings.ToLower(typ), "iammember")
}

func replaces(typ, key string) bool {
	if key == "project" || key == "name" || strings.Contains(strings.ToLower(typ), "iammember") {
		return true
	}
	return slices.Contains(immutable[typ], key)
}

// diff compares the new inputs with the state the API reported (readback.go).
func (s *standin) diff(_ context.Context, req p.DiffRequest) (p.DiffResponse, error) {
	typ := string(req.Urn.Type())
	resp := p.DiffResponse{DetailedDiff: map[string]p.PropertyDiff{}}
	olds, news := plain(req.OldInputs), plain(req.Inputs)
	for _, k := range changed(typ, olds, news, plain(req.State)) {
		_, oldOK := olds[k]
		_, newOK := news[k]
		kind := p.Update
		switch {
		case !oldOK:
			kind = p.Add
		case !newOK:
			kind = p.Delete
		}
		if replaces(typ, k) {
			kind = map[p.DiffKind]p.DiffKind{p.Add: p.AddReplace, p.Delete: p.DeleteReplace, p.Update: p.UpdateReplace}[kind]
			// Named resources cannot exist twice: the bridged provider deletes first.
			resp.DeleteBeforeReplace = true
		}
		resp.DetailedDiff[k] = p.PropertyDiff{Kind: kind}
		resp.HasChanges = true
	}
	return resp, nil
}

func equal(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

func (s *standin) create(_ context.Context, req p.CreateRequest) (p.CreateResponse, error) {
	typ, name := string(req.Urn.Type()), req.Urn.Name()
	inputs := presource.ToResourcePropertyMap(req.Properties)
	id, computed, err := render.NewMocks("", "", nil).NewResource(pulumi.MockResourceArgs{
		TypeToken: typ, Name: name, Inputs: inputs, Custom: true,
	})
	if err != nil {
		return p.CreateResponse{}, err
	}
	// What Google Cloud computes is added to what the API reports of the inputs; it
	// never renames what was given (the offline render's fallback sets every type's name
	// output).
	state := readBack(typ, plain(req.Properties))
	for k, v := range plain(presource.FromResourcePropertyMap(computed)) {
		if _, given := state[k]; !given {
			state[k] = v
		}
	}
	if req.DryRun {
		out := toProperties(state)
		for k, v := range req.Properties.All {
			if v.IsComputed() || v.Secret() {
				out = out.Set(k, v) // unknowns stay unknown, secrets secret
			}
		}
		return p.CreateResponse{ID: id, Properties: out}, nil
	}
	now, err := Now(s.dir)
	if err != nil {
		return p.CreateResponse{}, err
	}
	rec := Record{Type: typ, Name: name, ID: id, State: state, Created: now}
	err = s.locked(func(st map[string]Record) error {
		if typ == "gcp:projects/service:Service" {
			return s.enable(st, string(req.Urn), rec)
		}
		for _, r := range st {
			if r.ID == id && r.Type == typ && !idempotent(typ) {
				return fmt.Errorf("googleapi: Error 409: %s %s already exists", typ, id)
			}
		}
		if err := s.prerequisites(st, rec); err != nil {
			return fmt.Errorf("creating %s %q: %w", typ, name, err)
		}
		st[string(req.Urn)] = rec
		return s.log("create", typ, name)
	})
	if err != nil {
		return p.CreateResponse{}, err
	}
	return p.CreateResponse{ID: id, Properties: withSecrets(state, req.Properties)}, nil
}

func (s *standin) update(_ context.Context, req p.UpdateRequest) (p.UpdateResponse, error) {
	typ, name := string(req.Urn.Type()), req.Urn.Name()
	state := readBack(typ, plain(req.Inputs))
	// What the API computed at create stays (ids, URLs, emails).
	for k, v := range plain(req.State) {
		if _, ok := state[k]; !ok && Computed(typ, k) {
			state[k] = v
		}
	}
	if req.DryRun {
		return p.UpdateResponse{Properties: withSecrets(state, req.Inputs)}, nil
	}
	now, err := Now(s.dir)
	if err != nil {
		return p.UpdateResponse{}, err
	}
	err = s.locked(func(st map[string]Record) error {
		rec := st[string(req.Urn)]
		rec.Type, rec.Name, rec.ID, rec.State = typ, name, req.ID, state
		// An update is checked as of now (a new revision relies on its grants now); the
		// record keeps when it was created.
		check := rec
		check.Created = now
		if err := s.prerequisites(st, check); err != nil {
			return fmt.Errorf("updating %s %q: %w", typ, name, err)
		}
		st[string(req.Urn)] = rec
		return s.log("update", typ, name)
	})
	return p.UpdateResponse{Properties: withSecrets(state, req.Inputs)}, err
}

// withSecrets is state as properties, with the inputs' secrets kept secret.
func withSecrets(state map[string]any, inputs property.Map) property.Map {
	out := toProperties(state)
	for k, v := range inputs.All {
		if v.Secret() {
			out = out.Set(k, v)
		}
	}
	return out
}

func (s *standin) delete(_ context.Context, req p.DeleteRequest) error {
	typ, name := string(req.Urn.Type()), req.Urn.Name()
	if typ == "gcp:cloudrunv2/service:Service" || typ == "gcp:cloudrunv2/job:Job" || typ == "gcp:cloudrunv2/workerPool:WorkerPool" {
		if dp, ok := plain(req.Properties)["deletionProtection"].(bool); !ok || dp {
			return fmt.Errorf("cannot destroy %s %q without setting deletion_protection=false and running `pulumi up`", typ, name)
		}
	}
	return s.locked(func(st map[string]Record) error {
		delete(st, string(req.Urn))
		return s.log("delete", typ, name)
	})
}

// locked runs f on the state under an exclusive file lock and saves what f leaves.
func (s *standin) locked(f func(map[string]Record) error) error {
	return withLock(s.dir, func() error {
		st, err := readAll(s.dir)
		if err != nil {
			return err
		}
		// The state is saved whatever f returns: a failed call may have changed the
		// project (an enablement whose read-back failed stays enabled), and f changes
		// nothing else before it fails.
		ferr := f(st)
		data, err := json.MarshalIndent(st, "", "  ")
		if err != nil {
			return fmt.Errorf("stand-in state: %w", err)
		}
		// Whole: invoke (getProject) reads the state without the lock.
		if err := writeWhole(s.dir, stateFile, data); err != nil {
			return fmt.Errorf("stand-in state: %w", err)
		}
		return ferr
	})
}

// ReadState returns the resources the stand-in holds in dir, by URN (not the APIs
// enabled, which outlive the resources that enabled them).
func ReadState(dir string) (map[string]Record, error) {
	all, err := readAll(dir)
	if err != nil {
		return nil, err
	}
	maps.DeleteFunc(all, func(_ string, r Record) bool { return r.Type == enablementType })
	return all, nil
}

// readAll returns everything the stand-in holds in dir: resources by URN, enablements by
// enablementKey.
func readAll(dir string) (map[string]Record, error) {
	st := map[string]Record{}
	data, err := os.ReadFile(filepath.Join(dir, stateFile))
	if errors.Is(err, os.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return nil, fmt.Errorf("stand-in state: %w", err)
	}
	if err := json.Unmarshal(data, &st); err != nil {
		return nil, fmt.Errorf("stand-in state: %w", err)
	}
	return st, nil
}

func (s *standin) log(op, typ, name string) error {
	f, err := os.OpenFile(filepath.Join(s.dir, OpsLog), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("stand-in ops log: %w", err)
	}
	defer f.Close()
	_, err = fmt.Fprintf(f, "%s %s %s\n", op, typ, name)
	return err
}

// exists reports whether a resource of typ named ref (an id or a bare name) exists.
func exists(st map[string]Record, typ, project, ref string) bool {
	for _, r := range st {
		if r.Type != typ {
			continue
		}
		if r.ID == ref || (str(r.State, "name") == ref && (project == "" || str(r.State, "project") == project)) {
			return true
		}
	}
	return false
}

// runPrerequisites refuses a Cloud Run service or worker pool whose revision template
// Cloud Run refuses, or whose consumer could not start: a subscription it pulls that does
// not exist, a store it cannot reach. (The grants it relies on are grants.go's.)
func runPrerequisites(st map[string]Record, typ string, in map[string]any) error {
	tmpl, _ := in["template"].(map[string]any)
	if err := containerRules(typ, list(tmpl, "containers")); err != nil {
		return err
	}
	for _, c := range list(tmpl, "containers") {
		for _, e := range list(c, "envs") {
			switch str(e, "name") {
			case settings.PullSubscriptions:
				for sub := range strings.SplitSeq(str(e, "value"), ",") {
					if sub = strings.TrimSpace(sub); sub != "" && !exists(st, "gcp:pubsub/subscription:Subscription", str(in, "project"), sub) {
						return fmt.Errorf("the consumer pulls from subscription %s, which does not exist yet: the container would crash-loop on NotFound", sub)
					}
				}
			case settings.Store:
				store := str(e, "value")
				if ref, ok := e["valueSource"].(map[string]any); ok {
					key, _ := ref["secretKeyRef"].(map[string]any)
					store = secretValue(st, str(key, "secret"))
				}
				if err := storeReachable(tmpl, store); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// containerRules refuses the revision templates the Cloud Run Admin API (or pulumi-gcp
// v8's schema, for a worker pool) refuses: see the package comment.
func containerRules(typ string, containers []map[string]any) error {
	service := typ == "gcp:cloudrunv2/service:Service"
	names := map[string]bool{}
	probed := map[string]bool{}
	ingress := 0
	for _, c := range containers {
		name := str(c, "name")
		if len(containers) > 1 && name == "" {
			return fmt.Errorf("googleapi: Error 400: spec.template.spec.containers: every container must be named when a revision has more than one")
		}
		if names[name] {
			return fmt.Errorf("googleapi: Error 400: spec.template.spec.containers: container name %q is used twice", name)
		}
		names[name] = true
		_, hasPorts := c["ports"].(map[string]any)
		if hasPorts {
			ingress++
		}
		for _, field := range []string{"ports", "startupProbe", "livenessProbe"} {
			if _, ok := c[field].(map[string]any); ok && !service {
				return fmt.Errorf("%s: template.containers[%s].%s: pulumi-gcp v8's worker pool container has no such property", typ, name, field)
			}
		}
		for _, kind := range []string{"startupProbe", "livenessProbe"} {
			probe, ok := c[kind].(map[string]any)
			if !ok {
				continue
			}
			if err := probeRules(name, kind, probe, hasPorts); err != nil {
				return err
			}
			probed[name] = probed[name] || kind == "startupProbe"
		}
	}
	if service && len(containers) > 1 && ingress != 1 {
		return fmt.Errorf("googleapi: Error 400: spec.template.spec.containers: a revision with more than one container must have exactly one container with a port (its ingress container), has %d", ingress)
	}
	for _, c := range containers {
		deps, _ := c["dependsOns"].([]any)
		for _, d := range deps {
			name, _ := d.(string)
			if !names[name] {
				return fmt.Errorf("googleapi: Error 400: spec.template.spec.containers[%s].dependsOn: container %q not found", str(c, "name"), name)
			}
			if service && !probed[name] {
				return fmt.Errorf("spec.template.spec.containers[%s].dependsOn: container %q has no startup probe, so nothing makes %s wait until it is ready (Cloud Run starts a container once the ones it depends on pass their startup probes)", str(c, "name"), name, str(c, "name"))
			}
		}
	}
	return nil
}

// probeRules refuses a probe Cloud Run refuses: a startup probe may last at most 240 s
// (failureThreshold × periodSeconds), periodSeconds may not be below timeoutSeconds, and
// an HTTP or TCP probe of a container without ports must name its port.
func probeRules(container, kind string, probe map[string]any, hasPorts bool) error {
	num := func(k string, def float64) float64 {
		if v, ok := probe[k].(float64); ok {
			return v
		}
		return def
	}
	period, failures, timeout := num("periodSeconds", 10), num("failureThreshold", 3), num("timeoutSeconds", 1)
	if kind == "startupProbe" && period*failures > 240 {
		return fmt.Errorf("googleapi: Error 400: spec.template.spec.containers[%s].startupProbe: failureThreshold × periodSeconds is %gs, at most 240s", container, period*failures)
	}
	if period < timeout {
		return fmt.Errorf("googleapi: Error 400: spec.template.spec.containers[%s].%s: periodSeconds (%g) must be at least timeoutSeconds (%g)", container, kind, period, timeout)
	}
	for _, action := range []string{"httpGet", "tcpSocket"} {
		a, ok := probe[action].(map[string]any)
		if !ok {
			continue
		}
		if _, port := a["port"].(float64); !port && !hasPorts {
			return fmt.Errorf("googleapi: Error 400: spec.template.spec.containers[%s].%s.%s: no port, and the container exposes none to default to", container, kind, action)
		}
	}
	return nil
}

// secretValue returns the newest data a secret version of secret holds.
func secretValue(st map[string]Record, secret string) string {
	var newest Record
	for _, r := range st {
		if r.Type != "gcp:secretmanager/secretVersion:SecretVersion" {
			continue
		}
		if s := str(r.State, "secret"); (s == secret || strings.HasSuffix(s, "/secrets/"+secret)) && r.Created.After(newest.Created) {
			newest = r
		}
	}
	return str(newest.State, "secretData")
}

var cloudSQLSocket = regexp.MustCompile(`/cloudsql/([^/&?\s]+)`)

// storeReachable refuses a store the revision could not reach: a private address without
// VPC egress, or a Cloud SQL socket whose instance is not mounted. A revision that cannot
// open its store never becomes ready, so the real create fails.
func storeReachable(tmpl map[string]any, store string) error {
	if store == "" {
		return nil
	}
	if m := cloudSQLSocket.FindStringSubmatch(store); m != nil {
		for _, v := range list(tmpl, "volumes") {
			if sql, ok := v["cloudSqlInstance"].(map[string]any); ok {
				instances, _ := sql["instances"].([]any)
				if slices.Contains(instances, any(m[1])) {
					return nil
				}
			}
		}
		return fmt.Errorf("revision not ready: the store's Cloud SQL instance %s is not mounted (no cloudSqlInstance volume)", m[1])
	}
	u, err := url.Parse(store)
	if err != nil {
		return nil
	}
	if _, hasPassword := u.User.Password(); (u.Scheme == "postgres" || u.Scheme == "postgresql") && !hasPassword && u.Query().Get("password") == "" {
		// Cloud SQL for PostgreSQL authenticates every connection (a built-in user's
		// password, or IAM database authentication through a connector); a server
		// that takes a URL without credentials is one no production database is.
		return fmt.Errorf("revision not ready: the store %s://%s%s carries no password: the database refuses the connection "+
			"(FATAL: password authentication failed), so the consumer never opens its store", u.Scheme, u.Host, u.Path)
	}
	ip := net.ParseIP(u.Hostname())
	if ip == nil || !ip.IsPrivate() {
		return nil
	}
	if vpc, ok := tmpl["vpcAccess"].(map[string]any); ok && (len(list(vpc, "networkInterfaces")) > 0 || str(vpc, "connector") != "") {
		return nil
	}
	return fmt.Errorf("revision not ready: the store at %s is on a private address and the revision has no VPC egress", u.Host)
}

var (
	metricFilter = regexp.MustCompile(`logging\.googleapis\.com/user/([A-Za-z0-9_.\-]+)`)
	metricPromQL = regexp.MustCompile(`logging_googleapis_com:user_([A-Za-z0-9_]+)`)
)

// metricVisibleAfter is how long a new log-based metric stays invisible to Monitoring.
const metricVisibleAfter = 10 * time.Minute

func alertPrerequisites(st map[string]Record, in map[string]any, now time.Time) error {
	for _, c := range list(in, "conditions") {
		var names []string
		validate := true
		if th, ok := c["conditionThreshold"].(map[string]any); ok {
			for _, m := range metricFilter.FindAllStringSubmatch(str(th, "filter"), -1) {
				names = append(names, m[1])
			}
		}
		if pq, ok := c["conditionPrometheusQueryLanguage"].(map[string]any); ok {
			for _, m := range metricPromQL.FindAllStringSubmatch(str(pq, "query"), -1) {
				names = append(names, m[1])
			}
			if d, _ := pq["disableMetricValidation"].(bool); d {
				validate = false
			}
		}
		for _, name := range names {
			metric, ok := findMetric(st, name)
			if !ok {
				return fmt.Errorf("googleapi: Error 404: Cannot find metric(s) that match type = \"logging.googleapis.com/user/%s\"", name)
			}
			if validate && now.Sub(metric.Created) < metricVisibleAfter {
				return fmt.Errorf("googleapi: Error 404: Cannot find metric(s) that match type = \"logging.googleapis.com/user/%s\" (created %s ago; set disableMetricValidation)", name, now.Sub(metric.Created).Round(time.Second))
			}
		}
	}
	return nil
}

func findMetric(st map[string]Record, name string) (Record, bool) {
	for _, r := range st {
		if r.Type != "gcp:logging/metric:Metric" {
			continue
		}
		n := str(r.State, "name")
		if n == name || strings.NewReplacer("/", "_", ".", "_", "-", "_").Replace(n) == name {
			return r, true
		}
	}
	return Record{}, false
}

// toProperties turns plain Go values back into a property map.
func toProperties(m map[string]any) property.Map {
	return presource.FromResourcePropertyMap(presource.NewPropertyMapFromMap(m))
}

// plain turns a property map into plain Go values, secrets unwrapped and unknowns nil.
func plain(m property.Map) map[string]any {
	out := map[string]any{}
	for k, v := range m.All {
		out[k] = plainValue(v)
	}
	return out
}

func plainValue(v property.Value) any {
	switch {
	case v.IsComputed(), v.IsNull():
		return nil
	case v.IsString():
		return v.AsString()
	case v.IsBool():
		return v.AsBool()
	case v.IsNumber():
		return v.AsNumber()
	case v.IsArray():
		var out []any
		for _, e := range v.AsArray().All {
			out = append(out, plainValue(e))
		}
		return out
	case v.IsMap():
		return plain(v.AsMap())
	}
	return nil
}

func str(m map[string]any, k string) string {
	s, _ := m[k].(string)
	return s
}

func list(m map[string]any, k string) []map[string]any {
	var out []map[string]any
	items, _ := m[k].([]any)
	for _, i := range items {
		if mm, ok := i.(map[string]any); ok {
			out = append(out, mm)
		}
	}
	return out
}
