// Package ownership says who manages each audited resource — Pulumi, Terraform, an
// Eventarc trigger, Cloud Functions, or nobody — from the markers those tools leave, and
// where a finding on it is fixed: in the infrastructure code, around the trigger, or with
// a gcloud command.
//
// The markers:
//   - pulumi-gcp v8 labels what it creates goog-pulumi-provisioned=true (its rename of the
//     Terraform provider's attribution label); eventpipe's components label what they make
//     eventpipe_pipeline and eventpipe_env.
//   - terraform-provider-google v6 labels what it creates goog-terraform-provisioned=true
//     (add_terraform_attribution_label, on by default since 6.0).
//   - A managed-by (or managed_by) label naming pulumi or terraform, a common convention.
//   - Eventarc labels the topics and subscriptions of its Pub/Sub transport goog-eventarc
//     (empty value) and names them eventarc-REGION-TRIGGER-NNN and
//     eventarc-REGION-TRIGGER-NNN-sub-NNN.
//   - Cloud Functions (2nd gen) run as Cloud Run services labelled
//     goog-managed-by=cloudfunctions behind an Eventarc trigger; Cloud Functions (1st gen)
//     name their subscription gcf-FUNCTION-REGION-TOPIC and push to an App Engine
//     /_ah/push-handlers/pubsub/ endpoint.
//
// Neither Eventarc triggers nor Cloud Functions let their infrastructure code set a
// dead-letter or retry policy on the subscription they create
// (hashicorp/terraform-provider-google#17697, #25069): those fixes are gcloud commands on
// the subscription itself.
package ownership

import (
	"regexp"
	"strings"

	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"cloud.google.com/go/run/apiv2/runpb"

	"github.com/eventpipe/eventpipe/audit/inventory"
	"github.com/eventpipe/eventpipe/audit/model"
)

// Kind is who manages a resource.
type Kind string

// The kinds of owner.
const (
	Pulumi         Kind = "pulumi"
	Terraform      Kind = "terraform"
	Eventarc       Kind = "eventarc"
	CloudFunctions Kind = "cloud-functions"
	Unmanaged      Kind = "unmanaged"
)

// The labels that mark an owner.
const (
	labelPulumi          = "goog-pulumi-provisioned"
	labelTerraform       = "goog-terraform-provisioned"
	labelEventarc        = "goog-eventarc"
	labelManagedByGoogle = "goog-managed-by"
)

// Owner is who manages one resource, and how that was told.
type Owner struct {
	Kind Kind `json:"kind"`
	// Evidence is the marker that told it (a label, a naming pattern).
	Evidence string `json:"evidence"`
	// Trigger is the Eventarc trigger (or Cloud Functions function) that created the
	// resource, as its name tells it, when Kind is Eventarc or CloudFunctions.
	Trigger string `json:"trigger,omitempty"`
	// Region is the trigger's or function's region, when known.
	Region string `json:"region,omitempty"`
}

// String is a short description: "Eventarc (label goog-eventarc)".
func (o Owner) String() string {
	name := map[Kind]string{
		Pulumi: "Pulumi", Terraform: "Terraform", Eventarc: "Eventarc", CloudFunctions: "Cloud Functions",
		Unmanaged: "no infrastructure code",
	}[o.Kind]
	if o.Evidence == "" {
		return name
	}
	return name + " (" + o.Evidence + ")"
}

var (
	// eventarc-REGION-TRIGGER[-NNN]-sub-NNN; REGION is like us-west1 or europe-west2.
	eventarcSubscription = regexp.MustCompile(`^eventarc-([a-z]+-[a-z]+[0-9]+)-(.+?)(?:-[0-9]+)?-sub-[0-9]+$`)
	// eventarc-REGION-TRIGGER-NNN.
	eventarcTopic = regexp.MustCompile(`^eventarc-([a-z]+-[a-z]+[0-9]+)-(.+?)(?:-[0-9]+)?$`)
	// gcf-FUNCTION-REGION-TOPIC (older ones: gcf-FUNCTION-TOPIC, which cannot be split).
	gcfSubscription = regexp.MustCompile(`^gcf-(.+?)-([a-z]+-[a-z]+[0-9]+)-(.+)$`)
)

// fromLabels tells the infrastructure-code owner from labels, if any marks one.
func fromLabels(labels map[string]string) (Owner, bool) {
	switch {
	case labels[labelPulumi] == "true":
		return Owner{Kind: Pulumi, Evidence: "label " + labelPulumi + "=true"}, true
	case labels[labelTerraform] == "true":
		return Owner{Kind: Terraform, Evidence: "label " + labelTerraform + "=true"}, true
	}
	for _, key := range []string{"managed-by", "managed_by", "managedby"} {
		v := strings.ToLower(labels[key])
		switch {
		case strings.Contains(v, "pulumi"):
			return Owner{Kind: Pulumi, Evidence: "label " + key + "=" + labels[key]}, true
		case strings.Contains(v, "terraform"), strings.Contains(v, "opentofu"):
			return Owner{Kind: Terraform, Evidence: "label " + key + "=" + labels[key]}, true
		}
	}
	for _, key := range []string{"eventpipe_pipeline", "eventpipe_env"} {
		if _, ok := labels[key]; ok {
			return Owner{Kind: Pulumi, Evidence: "eventpipe component label " + key}, true
		}
	}
	return Owner{}, false
}

// OfSubscription tells who manages s; target is the Cloud Run service it pushes to, if known.
func OfSubscription(s *pubsubpb.Subscription, target *runpb.Service) Owner {
	if o, ok := fromLabels(s.GetLabels()); ok {
		return o
	}
	id := inventory.ShortName(s.GetName())
	if o, ok := eventarc(s.GetLabels(), "subscription", id, eventarcSubscription); ok {
		if target != nil && target.GetLabels()[labelManagedByGoogle] == "cloudfunctions" {
			o.Kind = CloudFunctions
			o.Evidence += "; pushes to Cloud Run service " + inventory.ShortName(target.GetName()) + " labelled " + labelManagedByGoogle + "=cloudfunctions (2nd gen)"
			o.Trigger = inventory.ShortName(target.GetName())
			o.Region = inventory.LocationOf(target.GetName())
		}
		return o
	}
	if strings.HasPrefix(id, "gcf-") && strings.Contains(s.GetPushConfig().GetPushEndpoint(), "/_ah/push-handlers/pubsub/") {
		o := Owner{Kind: CloudFunctions, Evidence: "Cloud Functions (1st gen) subscription name " + id + " and push handler"}
		if m := gcfSubscription.FindStringSubmatch(id); m != nil {
			o.Trigger, o.Region = m[1], m[2]
		}
		return o
	}
	return Owner{Kind: Unmanaged, Evidence: "no Pulumi, Terraform, Eventarc or Cloud Functions marker"}
}

// OfTopic tells who manages t.
func OfTopic(t *pubsubpb.Topic) Owner {
	if o, ok := fromLabels(t.GetLabels()); ok {
		return o
	}
	if o, ok := eventarc(t.GetLabels(), "topic", inventory.ShortName(t.GetName()), eventarcTopic); ok {
		return o
	}
	return Owner{Kind: Unmanaged, Evidence: "no Pulumi, Terraform or Eventarc marker"}
}

// eventarc tells an Eventarc owner of the topic or subscription (kind) id from its
// goog-eventarc label or its name, which names the trigger when it matches pattern.
func eventarc(labels map[string]string, kind, id string, pattern *regexp.Regexp) (Owner, bool) {
	_, labelled := labels[labelEventarc]
	m := pattern.FindStringSubmatch(id)
	if !labelled && m == nil {
		return Owner{}, false
	}
	o := Owner{Kind: Eventarc, Evidence: "label " + labelEventarc}
	if !labelled {
		o.Evidence = "Eventarc " + kind + " name " + id
	}
	if m != nil {
		o.Region, o.Trigger = m[1], m[2]
	}
	return o, true
}

// OfService tells who manages a Cloud Run service.
func OfService(svc *runpb.Service) Owner {
	if svc.GetLabels()[labelManagedByGoogle] == "cloudfunctions" {
		return Owner{Kind: CloudFunctions, Evidence: "label " + labelManagedByGoogle + "=cloudfunctions (2nd gen)",
			Trigger: inventory.ShortName(svc.GetName()), Region: inventory.LocationOf(svc.GetName())}
	}
	if o, ok := fromLabels(svc.GetLabels()); ok {
		return o
	}
	return Owner{Kind: Unmanaged, Evidence: "no Pulumi, Terraform or Cloud Functions marker"}
}

// Estate is who manages each resource of a model, and what a fix on each acts on.
type Estate struct {
	// Owners are the owners by URN: of topics, subscriptions and services, and of IAM
	// policies (their resource's owner). Placeholders of unread data have none.
	Owners map[string]Owner

	doc     *model.Document
	numbers map[string]string
	subs    map[string]*pubsubpb.Subscription
}

// Classify tells the owner of every resource of doc, the model of inv.
func Classify(inv *inventory.Inventory, doc *model.Document) *Estate {
	e := &Estate{Owners: map[string]Owner{}, doc: doc, numbers: map[string]string{}, subs: map[string]*pubsubpb.Subscription{}}
	topics := map[string]*pubsubpb.Topic{}
	services := map[string]*runpb.Service{}
	var allServices []*runpb.Service
	for _, p := range inv.Projects {
		e.numbers[p.ID] = p.Number
		for _, t := range p.Topics {
			topics[t.GetName()] = t
		}
		for _, s := range p.Subscriptions {
			e.subs[s.GetName()] = s
		}
		for _, svc := range p.Services {
			services[svc.GetName()] = svc
		}
		allServices = append(allServices, p.Services...)
	}
	for _, r := range doc.Resources {
		switch r.Type {
		case model.TypeTopic, model.TypeTopicIAMPolicy:
			if t, ok := topics[r.Name]; ok {
				e.Owners[r.URN] = OfTopic(t)
			}
		case model.TypeSubscription, model.TypeSubscriptionIAMPolicy:
			if s, ok := e.subs[r.Name]; ok {
				e.Owners[r.URN] = OfSubscription(s, inventory.PushTarget(s, allServices))
			}
		case model.TypeService, model.TypeServiceIAMPolicy:
			if svc, ok := services[r.Name]; ok {
				e.Owners[r.URN] = OfService(svc)
			}
		}
	}
	return e
}

// Fix is the owner of the resource urn and where a finding of rule ruleID on it is
// fixed; ok is false for a resource of no known owner.
func (e *Estate) Fix(urn, ruleID string) (owner Owner, fix string, ok bool) {
	o, ok := e.Owners[urn]
	if !ok {
		return Owner{}, "", false
	}
	return o, Fix(o, ruleID, e.Target(urn)), true
}
