package main

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/eventpipe/eventpipe/render"
)

// servingAPI is the API each resource type eventpipe declares is served
// by, written out here independently of the components (which make every
// resource wait for all the APIs they enable): a resource type the table
// lacks fails TestEveryResourceWaitsForItsAPI until its API is known.
var servingAPI = map[string]string{
	"gcp:pubsub/topic:Topic":                                 "pubsub.googleapis.com",
	"gcp:pubsub/subscription:Subscription":                   "pubsub.googleapis.com",
	"gcp:pubsub/topicIAMMember:TopicIAMMember":               "pubsub.googleapis.com",
	"gcp:pubsub/subscriptionIAMMember:SubscriptionIAMMember": "pubsub.googleapis.com",
	"gcp:projects/serviceIdentity:ServiceIdentity":           "pubsub.googleapis.com",
	"gcp:serviceaccount/account:Account":                     "iam.googleapis.com",
	"gcp:serviceaccount/iAMMember:IAMMember":                 "iam.googleapis.com",
	"gcp:projects/iAMMember:IAMMember":                       "cloudresourcemanager.googleapis.com",
	"gcp:cloudrunv2/serviceIamMember:ServiceIamMember":       "run.googleapis.com",
	"gcp:firestore/field:Field":                              "firestore.googleapis.com",
	"gcp:logging/metric:Metric":                              "logging.googleapis.com",
	"gcp:monitoring/alertPolicy:AlertPolicy":                 "monitoring.googleapis.com",
	"gcp:monitoring/customService:CustomService":             "monitoring.googleapis.com",
	"gcp:monitoring/slo:Slo":                                 "monitoring.googleapis.com",
	"gcp:secretmanager/secret:Secret":                        "secretmanager.googleapis.com",
	"gcp:secretmanager/secretVersion:SecretVersion":          "secretmanager.googleapis.com",
	"gcp:secretmanager/secretIamMember:SecretIamMember":      "secretmanager.googleapis.com",
	"gcp:firestore/database:Database":                        "firestore.googleapis.com",
	"gcp:compute/subnetworkIAMMember:SubnetworkIAMMember":    "compute.googleapis.com",
}

const (
	apiType        = "gcp:projects/service:Service"
	runServiceType = "gcp:cloudrunv2/service:Service"
	sleepType      = "time:index/sleep:Sleep"
)

// apiServices maps each enabled API of plan to its resource's URN, failing
// on one that could be disabled by a destroy.
func apiServices(t *testing.T, plan *render.Plan) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, s := range plan.StepsOfType(apiType) {
		api, _ := s.NewState.Inputs["service"].(string)
		out[api] = s.NewState.URN
		if s.NewState.Inputs["disableOnDestroy"] != false || s.NewState.Inputs["disableDependentServices"] != false {
			t.Errorf("API %s may be disabled on destroy: %v", api, s.NewState.Inputs)
		}
	}
	return out
}

// TestEveryResourceWaitsForItsAPI: in every shipped stack (and the one
// with several stores), Service Usage and Cloud Resource Manager are
// enabled first and every other API after both (the provider reads each
// enablement back through Cloud Resource Manager); each enabled API is one
// the stack uses; a wait follows every enablement; and every resource is
// created after the API serving it and that wait, each Cloud Run service
// after every enabled API (its consumer calls them at run time).
func TestEveryResourceWaitsForItsAPI(t *testing.T) {
	for _, tc := range []struct{ stack, file string }{{"dev", ""}, {"staging", ""}, {"prod", ""}, {"mixed-stores", "testdata/Pulumi.mixed-stores.yaml"}} {
		t.Run(tc.stack, func(t *testing.T) {
			res, err := render.Render(context.Background(), render.Options{Stack: tc.stack, ConfigFile: tc.file, StackDir: "."})
			if err != nil {
				t.Fatal(err)
			}
			plan := res.Plan
			apis := apiServices(t, plan)
			first := []string{apis["serviceusage.googleapis.com"], apis["cloudresourcemanager.googleapis.com"]}
			if slices.Contains(first, "") {
				t.Fatalf("APIs %v: want Service Usage and Cloud Resource Manager", apis)
			}
			var propagated string
			for _, s := range plan.StepsOfType(sleepType) {
				if strings.HasSuffix(s.URN, "-apis-propagated") {
					propagated = s.URN
				}
			}
			for api, urn := range apis {
				st := state(plan, urn)
				if slices.Contains(first, urn) {
					for _, other := range apis {
						if waits(plan, st, other) {
							t.Errorf("%s waits for %s: it must come first", api, other)
						}
					}
					continue
				}
				for _, f := range first {
					if !slices.Contains(st.Dependencies, f) {
						t.Errorf("%s does not wait for %s", api, f)
					}
				}
				if propagated == "" || !slices.Contains(state(plan, propagated).Dependencies, urn) {
					t.Errorf("no wait after enabling %s (%q)", api, propagated)
				}
			}
			used := map[string]bool{"serviceusage.googleapis.com": true}
			for _, s := range plan.Steps {
				st := s.NewState
				if !st.Custom || st.Type == apiType || st.Type == sleepType || strings.HasPrefix(st.Type, "pulumi:providers:") {
					continue
				}
				if !waits(plan, st, propagated) {
					t.Errorf("%s does not wait for the APIs to propagate", st.URN)
				}
				if st.Type == runServiceType {
					for api, urn := range apis {
						if !waits(plan, st, urn) {
							t.Errorf("%s does not wait for %s", st.URN, api)
						}
					}
					used["run.googleapis.com"] = true
					continue
				}
				api, ok := servingAPI[st.Type]
				if !ok {
					t.Errorf("resource type %s: which API serves it? (add it to servingAPI)", st.Type)
					continue
				}
				used[api] = true
				if urn, ok := apis[api]; !ok {
					t.Errorf("%s needs %s, which the stack does not enable", st.URN, api)
				} else if !waits(plan, st, urn) {
					t.Errorf("%s does not wait for %s", st.URN, api)
				}
			}
			for api := range apis {
				if !used[api] && !runtimeAPI(res, api) {
					t.Errorf("API %s is enabled but nothing in the stack uses it", api)
				}
			}
		})
	}
}

// state is the planned state of the resource urn.
func state(plan *render.Plan, urn string) render.State {
	for _, s := range plan.Steps {
		if s.URN == urn {
			return s.NewState
		}
	}
	return render.State{}
}

// waits reports whether st is created after the resource urn: it depends on
// it, directly or through what it depends on.
func waits(plan *render.Plan, st render.State, urn string) bool {
	seen := map[string]bool{}
	todo := slices.Clone(st.Dependencies)
	for len(todo) > 0 {
		d := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		if d == urn {
			return true
		}
		if !seen[d] {
			seen[d] = true
			todo = append(todo, state(plan, d).Dependencies...)
		}
	}
	return false
}

// runtimeAPI reports whether api is one the stack's consumers call at run
// time rather than a resource's: Cloud Trace with the collector, Cloud SQL
// Admin for Cloud SQL sockets, Compute Engine for Direct VPC egress.
func runtimeAPI(res *render.Result, api string) bool {
	st := res.Stack
	switch api {
	case "cloudtrace.googleapis.com":
		return st.Defaults.TraceCollector != nil && *st.Defaults.TraceCollector
	case "sqladmin.googleapis.com", "compute.googleapis.com":
		for _, p := range st.Pipelines {
			if api == "sqladmin.googleapis.com" && len(p.Consumer.CloudSQLInstances) > 0 || api == "compute.googleapis.com" && p.Consumer.VPCAccess != nil {
				return true
			}
		}
	}
	return false
}

// TestManageAPIsOptOut: eventpipe:manageApis: false enables nothing and
// adds no dependency on an API.
func TestManageAPIsOptOut(t *testing.T) {
	src, err := os.ReadFile("Pulumi.dev.yaml")
	if err != nil {
		t.Fatal(err)
	}
	doc := strings.Replace(string(src), "config:\n", "config:\n  eventpipe:manageApis: false\n", 1)
	path := filepath.Join(t.TempDir(), "Pulumi.dev.yaml")
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := render.Render(context.Background(), render.Options{Stack: "dev", ConfigFile: path, StackDir: "."})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(res.Plan.StepsOfType(apiType)); n != 0 {
		t.Errorf("manageApis false still enables %d APIs", n)
	}
	for _, s := range res.Plan.Steps {
		for _, dep := range s.NewState.Dependencies {
			if strings.Contains(dep, apiType) {
				t.Errorf("%s depends on an API resource %s", s.NewState.URN, dep)
			}
		}
	}
	doc = strings.Replace(string(src), "config:\n", "config:\n  eventpipe:manageApis: nope\n", 1)
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := render.Render(context.Background(), render.Options{Stack: "dev", ConfigFile: path, StackDir: "."}); err == nil || !strings.Contains(err.Error(), "eventpipe:manageApis") {
		t.Errorf("manageApis: nope: err = %v, want one naming eventpipe:manageApis", err)
	}
}
