// Package model turns an audit's inventory into the document the policy rules evaluate: a
// `pulumi stack export` (version 3) whose resources carry pulumi-gcp v8 type tokens and
// input names, so the rules that check a plan check the live estate unchanged. IAM
// policies become TopicIAMPolicy, SubscriptionIAMPolicy, ServiceIamPolicy and the
// project's IAMPolicy with policyData, as pulumi-gcp models them. What the audit could not
// read becomes the value `pulumi preview` prints for an unknown, so no verdict rests on it.
package model

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"

	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"cloud.google.com/go/run/apiv2/runpb"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/plugin"

	"github.com/eventpipe/eventpipe/audit/inventory"
)

// Stack is the stack name of every audited resource's URN:
// urn:pulumi:live::PROJECT::TYPE::NAME.
const Stack = "live"

// UnknownValue is the value `pulumi preview --json` prints for a value not known yet
// (Pulumi's own sentinel); the rules give no verdict on it. The model uses it for what
// the audit could not read.
const UnknownValue = plugin.UnknownStringValue

// The pulumi-gcp v8 type tokens of the resources an audit reads.
const (
	TypeTopic                 = "gcp:pubsub/topic:Topic"
	TypeSubscription          = "gcp:pubsub/subscription:Subscription"
	TypeTopicIAMPolicy        = "gcp:pubsub/topicIAMPolicy:TopicIAMPolicy"
	TypeSubscriptionIAMPolicy = "gcp:pubsub/subscriptionIAMPolicy:SubscriptionIAMPolicy"
	TypeProjectIAMPolicy      = "gcp:projects/iAMPolicy:IAMPolicy"
	TypeService               = "gcp:cloudrunv2/service:Service"
	TypeServiceIAMPolicy      = "gcp:cloudrunv2/serviceIamPolicy:ServiceIamPolicy"
	TypeAlertPolicy           = "gcp:monitoring/alertPolicy:AlertPolicy"
	TypeField                 = "gcp:firestore/field:Field"
)

// Resource is one resource of the document. The fields with JSON names are those of a
// stack export's resource; the others say where it came from.
type Resource struct {
	URN                  string              `json:"urn"`
	Custom               bool                `json:"custom"`
	Type                 string              `json:"type"`
	ID                   string              `json:"id"`
	Inputs               map[string]any      `json:"inputs"`
	Dependencies         []string            `json:"dependencies,omitempty"`
	PropertyDependencies map[string][]string `json:"propertyDependencies,omitempty"`
	// PossibleDependencies are, for a linking property the audit could not read, the
	// resources it may name: a topic of the subscription's own group of projects (see
	// Split and scopeUnreadLinks). The rules read them as they read a Terraform plan's
	// possibleDependencies (one of these, not surely any).
	PossibleDependencies map[string][]string `json:"possibleDependencies,omitempty"`

	// Project is the Google Cloud project the resource is in.
	Project string `json:"-"`
	// Name is the Google resource name (projects/P/subscriptions/S, …); for an IAM policy,
	// the name of the resource it is attached to; empty for placeholders of unread data.
	Name string `json:"-"`
}

// Document is the model of an inventory: every resource, in a fixed order.
type Document struct {
	Resources []Resource
	// Drift are the differences between the live estate and a stack, which the rules
	// report (EP200); the JSON document holds them as eventpipeAudit.drift.
	Drift []Drift
	// ProjectNumbers maps the ID of each project of the resources whose number the audit
	// read to that number; the JSON document holds them as eventpipeAudit.projectNumbers,
	// from which the rules name the Pub/Sub service agent a subscription dead-letters as
	// (service-NUMBER@gcp-sa-pubsub.iam.gserviceaccount.com, EP006/EP007).
	ProjectNumbers map[string]string

	byURN  map[string]int
	byName map[string]string // type + " " + Google name → URN
}

// Build builds the model of inv (sorted first, so the document is deterministic).
func Build(inv *inventory.Inventory) *Document {
	inv.Sort()
	b := &builder{doc: newDocument(nil)}
	for _, p := range inv.Projects {
		b.services = append(b.services, p.Services...)
		if p.Number != "" {
			if b.doc.ProjectNumbers == nil {
				b.doc.ProjectNumbers = map[string]string{}
			}
			b.doc.ProjectNumbers[p.ID] = p.Number
		}
	}
	// Topics first: subscriptions and grants refer to them by URN.
	for _, p := range inv.Projects {
		for _, t := range p.Topics {
			in := topicInputs(p.ID, t)
			if p.Unshown[t.GetName()] {
				in["messageRetentionDuration"] = UnknownValue
			}
			b.add(p.ID, TypeTopic, inventory.ShortName(t.GetName()), t.GetName(), in)
		}
	}
	// Then the Cloud Run services subscriptions push to.
	for _, p := range inv.Projects {
		b.addServices(p)
	}
	for _, p := range inv.Projects {
		for _, s := range p.Subscriptions {
			b.addSubscription(p, s)
		}
	}
	for _, p := range inv.Projects {
		b.addPolicies(p)
		b.addAlertPolicies(p)
		b.addTTLFields(p)
	}
	b.doc.scopeUnreadLinks()
	return b.doc
}

// scopeUnreadLinks gives each subscription's topic or dead-letter topic the audit could
// not read (a search result without the resource) the topics it may be: those of its own
// group of projects that a subscription of the group reads or dead-letters to, the only
// ones whose being its topic changes a verdict (who may be a dead-letter reader, whether a
// dead-letter topic may be read). Unscoped, an unread link may name any topic of the
// document, so one unread subscription in one project would make every subscription of
// every other project a possible dead-letter reader, and a model judged whole (eventpipe
// check on --model's file) would withhold verdicts the audit, judging each group alone,
// gives. An empty list (no such topic) means a topic outside the document.
func (d *Document) scopeUnreadLinks() {
	group := d.groups()
	linked := map[string][]string{} // group root → the topics its subscriptions name
	seen := map[string]bool{}
	for _, r := range d.Resources {
		if r.Type != TypeSubscription {
			continue
		}
		root := group(r.Project)
		for _, property := range []string{"topic", "deadLetterPolicy"} {
			for _, t := range r.PropertyDependencies[property] {
				if !seen[t] {
					seen[t] = true
					linked[root] = append(linked[root], t)
				}
			}
		}
	}
	for i := range d.Resources {
		r := &d.Resources[i]
		if r.Type != TypeSubscription {
			continue
		}
		for _, property := range []string{"topic", "deadLetterPolicy"} {
			if r.Inputs[property] != UnknownValue {
				continue
			}
			if r.PossibleDependencies == nil {
				r.PossibleDependencies = map[string][]string{}
			}
			candidates := append([]string{}, linked[group(r.Project)]...) // never nil: [] is "outside"
			sort.Strings(candidates)
			r.PossibleDependencies[property] = candidates
		}
	}
}

// groups returns the function naming each project's group: projects that refer to one
// another (a subscription reading or dead-lettering to another project's topic, or pushing
// to its Cloud Run service) share the root of one.
func (d *Document) groups() func(project string) string {
	parent := map[string]string{}
	var find func(string) string
	find = func(p string) string {
		if parent[p] == "" || parent[p] == p {
			parent[p] = p
			return p
		}
		root := find(parent[p])
		parent[p] = root
		return root
	}
	for _, r := range d.Resources {
		find(r.Project)
		for _, dep := range r.Dependencies {
			if t, ok := d.Resource(dep); ok && t.Project != r.Project {
				parent[find(t.Project)] = find(r.Project)
			}
		}
	}
	return find
}

// Split divides the document into the groups of projects that refer to one another (a
// subscription reading or dead-lettering to another project's topic, or pushing to its
// Cloud Run service), each a document of its own: the rules then judge each group alone,
// so what one project's audit could not read (its alert policies) does not withhold
// verdicts on another, and like-named resources of unrelated projects are not confused.
func (d *Document) Split() []*Document {
	find := d.groups()
	var order []string
	groups := map[string][]Resource{}
	for _, r := range d.Resources {
		root := find(r.Project)
		if _, seen := groups[root]; !seen {
			order = append(order, root)
		}
		groups[root] = append(groups[root], r)
	}
	out := make([]*Document, 0, len(order))
	for _, root := range order {
		part := newDocument(groups[root])
		for _, r := range part.Resources {
			if n, ok := d.ProjectNumbers[r.Project]; ok {
				if part.ProjectNumbers == nil {
					part.ProjectNumbers = map[string]string{}
				}
				part.ProjectNumbers[r.Project] = n
			}
		}
		out = append(out, part)
	}
	return out
}

// newDocument indexes resources.
func newDocument(resources []Resource) *Document {
	d := &Document{Resources: resources, byURN: map[string]int{}, byName: map[string]string{}}
	for i, r := range resources {
		d.byURN[r.URN] = i
		if r.Name != "" {
			d.byName[r.Type+" "+r.Name] = r.URN
		}
	}
	return d
}

// Drift is one resource a stack declares that is missing live or whose live settings
// differ from the declared ones.
type Drift struct {
	// URN is the declared resource's URN in the stack.
	URN     string `json:"urn"`
	Type    string `json:"type"`
	Message string `json:"message"`
}

// stackExport is the document `pulumi stack export` prints, with what the audit found
// beyond the resources (drift, project numbers) under the top-level key eventpipeAudit.
type stackExport struct {
	Version    int `json:"version"`
	Deployment struct {
		Manifest  map[string]any `json:"manifest"`
		Resources []Resource     `json:"resources"`
	} `json:"deployment"`
	Audit *auditFindings `json:"eventpipeAudit,omitempty"`
}

type auditFindings struct {
	Drift          []Drift           `json:"drift,omitempty"`
	ProjectNumbers map[string]string `json:"projectNumbers,omitempty"`
}

// JSON is the document as a `pulumi stack export`.
func (d *Document) JSON() ([]byte, error) {
	var out stackExport
	out.Version = 3
	out.Deployment.Manifest = map[string]any{"magic": "", "version": "eventpipe audit"}
	out.Deployment.Resources = d.Resources
	if out.Deployment.Resources == nil {
		out.Deployment.Resources = []Resource{}
	}
	if len(d.Drift) > 0 || len(d.ProjectNumbers) > 0 {
		out.Audit = &auditFindings{Drift: d.Drift, ProjectNumbers: d.ProjectNumbers}
	}
	data, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encoding the audit model: %w", err)
	}
	return append(data, '\n'), nil
}

// Resource returns the resource of urn.
func (d *Document) Resource(urn string) (Resource, bool) {
	i, ok := d.byURN[urn]
	if !ok {
		return Resource{}, false
	}
	return d.Resources[i], true
}

// URN returns the URN of the resource of type typ with Google name name.
func (d *Document) URN(typ, name string) (string, bool) {
	urn, ok := d.byName[typ+" "+name]
	return urn, ok
}

// URNOf is the URN of a resource of type typ named name in project.
func URNOf(project, typ, name string) string {
	return "urn:pulumi:" + Stack + "::" + project + "::" + typ + "::" + name
}

type builder struct {
	doc *Document
	// services are every project's Cloud Run services, which push subscriptions target.
	services []*runpb.Service
}

// add appends a resource and returns its URN.
func (b *builder) add(project, typ, urnName, googleName string, inputs map[string]any) string {
	urn := URNOf(project, typ, urnName)
	for n := 2; ; n++ { // two resources of one name (services in two regions) stay apart
		if _, taken := b.doc.byURN[urn]; !taken {
			break
		}
		urn = URNOf(project, typ, fmt.Sprintf("%s#%d", urnName, n))
	}
	b.doc.byURN[urn] = len(b.doc.Resources)
	if googleName != "" {
		b.doc.byName[typ+" "+googleName] = urn
	}
	b.doc.Resources = append(b.doc.Resources, Resource{
		URN: urn, Custom: true, Type: typ, ID: googleName, Inputs: inputs, Project: project, Name: googleName,
	})
	return urn
}

// link records that input property of the last added resource refers to the resource of
// type typ named name, when the inventory has it.
func (b *builder) link(property, typ, name string) {
	target, ok := b.doc.byName[typ+" "+name]
	if !ok {
		return
	}
	r := &b.doc.Resources[len(b.doc.Resources)-1]
	if r.PropertyDependencies == nil {
		r.PropertyDependencies = map[string][]string{}
	}
	r.PropertyDependencies[property] = append(r.PropertyDependencies[property], target)
	if !slices.Contains(r.Dependencies, target) {
		r.Dependencies = append(r.Dependencies, target)
		sort.Strings(r.Dependencies)
	}
}

func (b *builder) addSubscription(p *inventory.Project, s *pubsubpb.Subscription) {
	in := subscriptionInputs(p.ID, s)
	if p.Unshown[s.GetName()] {
		in = unshownSubscription(p.ID, s)
	}
	b.add(p.ID, TypeSubscription, inventory.ShortName(s.GetName()), s.GetName(), in)
	b.link("topic", TypeTopic, s.GetTopic())
	if p.Unshown[s.GetName()] {
		return // its other links are as unknown as the settings that hold them
	}
	if dlt := s.GetDeadLetterPolicy().GetDeadLetterTopic(); dlt != "" {
		b.link("deadLetterPolicy", TypeTopic, dlt)
	}
	if svc := inventory.PushTarget(s, b.services); svc != nil {
		b.link("pushConfig", TypeService, svc.GetName())
	}
}
