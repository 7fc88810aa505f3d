// Package inventory holds what an audit found in Google Cloud, in Google's own API types:
// the Pub/Sub topics and subscriptions of each project, the IAM policies on them, the
// Cloud Run services push subscriptions target, the alert policies and Firestore TTL
// fields the rules look at, and what could not be read. The live reader (audit/live) and
// the Cloud Asset Inventory reader (audit/cai) both fill it; audit/model turns it into the
// document the rules evaluate.
package inventory

import (
	"sort"
	"time"

	"cloud.google.com/go/firestore/apiv1/admin/adminpb"
	"cloud.google.com/go/iam/apiv1/iampb"
	"cloud.google.com/go/monitoring/apiv3/v2/monitoringpb"
	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"cloud.google.com/go/run/apiv2/runpb"
)

// Inventory is everything one audit read, project by project.
type Inventory struct {
	// Source says where it was read from: "live" or the Cloud Asset Inventory file names.
	Source   string
	Projects []*Project
}

// Project is one Google Cloud project's resources.
type Project struct {
	// ID is the project ID (my-project), Number its number ("123456789012", empty when
	// unknown).
	ID     string
	Number string

	Topics        []*pubsubpb.Topic
	Subscriptions []*pubsubpb.Subscription
	// Policies are the IAM policies read, by full resource name
	// (projects/P/topics/T, projects/P/subscriptions/S, projects/P/locations/L/services/N,
	// and projects/P for the project's own policy). A resource with no entry was not read:
	// see Gaps.
	Policies map[string]*iampb.Policy
	// Services are the Cloud Run services (v2 shape) push subscriptions target.
	Services []*runpb.Service
	// AlertPolicies are the project's alert policies (read when AlertPoliciesRead).
	AlertPolicies     []*monitoringpb.AlertPolicy
	AlertPoliciesRead bool
	// TTLFields are the Firestore fields with a TTL policy (read when TTLFieldsRead).
	TTLFields     []*adminpb.Field
	TTLFieldsRead bool
	// Backlog is each subscription's oldest unacknowledged message age, by full
	// subscription name, when the Monitoring API answered.
	Backlog map[string]time.Duration
	// Unshown holds the full names of the topics and subscriptions whose settings the
	// source does not show (a search result without its resource): only their name,
	// labels and project are known.
	Unshown map[string]bool
	// Gaps are what could not be read, and why.
	Gaps []Gap
}

// GapKind names a kind of information an audit could not read.
type GapKind string

// The gap kinds.
const (
	// GapPolicy: one resource's IAM policy (Gap.Resource names it).
	GapPolicy GapKind = "iam-policy"
	// GapService: a Cloud Run service a push subscription targets.
	GapService GapKind = "cloud-run-service"
	// GapAlertPolicies: the project's alert policies.
	GapAlertPolicies GapKind = "alert-policies"
	// GapTTLFields: the project's Firestore TTL fields.
	GapTTLFields GapKind = "firestore-ttl"
	// GapBacklog: the Monitoring API's backlog figures.
	GapBacklog GapKind = "backlog"
	// GapProjectNumber: the project number.
	GapProjectNumber GapKind = "project-number"
)

// Gap is something an audit could not read. The rules see it as a value the input cannot
// show, so no verdict rests on it.
type Gap struct {
	Kind GapKind `json:"kind"`
	// Resource is the full name of the resource concerned, if one.
	Resource string `json:"resource,omitempty"`
	// Reason is the error or the missing permission.
	Reason string `json:"reason"`
}

// AddGap records a gap.
func (p *Project) AddGap(kind GapKind, resource, reason string) {
	p.Gaps = append(p.Gaps, Gap{Kind: kind, Resource: resource, Reason: reason})
}

// HasGap reports whether a gap of kind was recorded (for resource, when not empty).
func (p *Project) HasGap(kind GapKind, resource string) bool {
	for _, g := range p.Gaps {
		if g.Kind == kind && (resource == "" || g.Resource == resource) {
			return true
		}
	}
	return false
}

// SetPolicy records the IAM policy read for a resource.
func (p *Project) SetPolicy(resource string, policy *iampb.Policy) {
	if p.Policies == nil {
		p.Policies = map[string]*iampb.Policy{}
	}
	p.Policies[resource] = policy
}

// SetUnshown records that the settings of the resource name are not shown.
func (p *Project) SetUnshown(name string, unshown bool) {
	if !unshown {
		delete(p.Unshown, name)
		return
	}
	if p.Unshown == nil {
		p.Unshown = map[string]bool{}
	}
	p.Unshown[name] = true
}

// Project returns the project with id, adding it when absent.
func (inv *Inventory) Project(id string) *Project {
	for _, p := range inv.Projects {
		if p.ID == id {
			return p
		}
	}
	p := &Project{ID: id}
	inv.Projects = append(inv.Projects, p)
	return p
}

// Sort orders projects by ID and each project's resources by name, so that everything
// built from an inventory is the same whatever order the APIs answered in.
func (inv *Inventory) Sort() {
	sort.Slice(inv.Projects, func(i, j int) bool { return inv.Projects[i].ID < inv.Projects[j].ID })
	for _, p := range inv.Projects {
		sort.Slice(p.Topics, func(i, j int) bool { return p.Topics[i].GetName() < p.Topics[j].GetName() })
		sort.Slice(p.Subscriptions, func(i, j int) bool {
			return p.Subscriptions[i].GetName() < p.Subscriptions[j].GetName()
		})
		sort.Slice(p.Services, func(i, j int) bool { return p.Services[i].GetName() < p.Services[j].GetName() })
		sort.Slice(p.AlertPolicies, func(i, j int) bool {
			return p.AlertPolicies[i].GetName() < p.AlertPolicies[j].GetName()
		})
		sort.Slice(p.TTLFields, func(i, j int) bool { return p.TTLFields[i].GetName() < p.TTLFields[j].GetName() })
		sort.SliceStable(p.Gaps, func(i, j int) bool {
			if p.Gaps[i].Kind != p.Gaps[j].Kind {
				return p.Gaps[i].Kind < p.Gaps[j].Kind
			}
			return p.Gaps[i].Resource < p.Gaps[j].Resource
		})
	}
}

// GapGroup is the gaps of one kind and reason: a denied permission is one line, not one
// per resource.
type GapGroup struct {
	Kind   GapKind
	Reason string
	// Resources are the resources concerned, in order of appearance.
	Resources []string
}

// GroupGaps groups gaps by kind and reason, in order of first appearance.
func GroupGaps(gaps []Gap) []GapGroup {
	var out []GapGroup
	index := map[[2]string]int{}
	for _, g := range gaps {
		key := [2]string{string(g.Kind), g.Reason}
		i, ok := index[key]
		if !ok {
			i = len(out)
			index[key] = i
			out = append(out, GapGroup{Kind: g.Kind, Reason: g.Reason})
		}
		if g.Resource != "" {
			out[i].Resources = append(out[i].Resources, g.Resource)
		}
	}
	return out
}
