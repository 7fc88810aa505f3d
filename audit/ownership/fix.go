package ownership

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/eventpipe/eventpipe/audit/inventory"
	"github.com/eventpipe/eventpipe/audit/model"
	"github.com/eventpipe/eventpipe/spec"
)

// Target is what a finding's fix acts on, as far as the inventory tells it.
type Target struct {
	Project string
	// Number is the project number, "" when unknown.
	Number string
	// Subscription, Topic and DeadLetterTopic are full names ("" when not concerned).
	Subscription    string
	Topic           string
	DeadLetterTopic string
	// Service and Region name a Cloud Run service.
	Service string
	Region  string
}

// Target is the target of a finding on the resource urn.
func (e *Estate) Target(urn string) Target {
	r, ok := e.doc.Resource(urn)
	if !ok {
		return Target{}
	}
	t := Target{Project: r.Project, Number: e.numbers[r.Project]}
	switch r.Type {
	case model.TypeSubscription, model.TypeSubscriptionIAMPolicy:
		t.Subscription = r.Name
		if s, ok := e.subs[r.Name]; ok {
			t.Topic = s.GetTopic()
			t.DeadLetterTopic = s.GetDeadLetterPolicy().GetDeadLetterTopic()
		}
	case model.TypeTopic, model.TypeTopicIAMPolicy:
		t.Topic = r.Name
	case model.TypeService, model.TypeServiceIAMPolicy:
		t.Service, t.Region = inventory.ShortName(r.Name), inventory.LocationOf(r.Name)
	}
	return t
}

// Where says where a finding on t, a resource of o, is fixed.
func Where(o Owner, t Target) string {
	if t.Service != "" && o.Kind == CloudFunctions {
		return "It is the Cloud Run service of function " + o.Trigger + " (Cloud Functions, 2nd gen): fix it where the function is deployed (its code, or the flags of `gcloud functions deploy`), since a redeployment resets the service."
	}
	switch o.Kind {
	case Pulumi:
		return "Fix it in the Pulumi program that declares it and run `pulumi up`: a change made by hand is reverted by the next update."
	case Terraform:
		return "Fix it in the Terraform configuration that declares it and run `terraform apply`: a change made by hand is reverted by the next apply."
	case Eventarc:
		trigger := "the Eventarc trigger that created it"
		if o.Trigger != "" {
			trigger = fmt.Sprintf("Eventarc trigger %s (%s)", o.Trigger, o.Region)
		}
		return "It belongs to " + trigger + ", whose settings cannot set this on the subscription (hashicorp/terraform-provider-google#17697): change the subscription itself, and record the change beside the trigger's code, since re-creating the trigger re-creates the subscription without it."
	case CloudFunctions:
		fn := "the function"
		if o.Trigger != "" {
			fn = "function " + o.Trigger
		}
		return "It belongs to " + fn + " (Cloud Functions), whose deployment cannot set this on its subscription (hashicorp/terraform-provider-google#25069): change the subscription itself after each deployment that re-creates the trigger."
	case Unmanaged:
		return "No infrastructure code manages it: fix it now with gcloud, then bring it under code (`pulumi import` or `terraform import`) so it stays fixed."
	}
	return ""
}

// Command is a gcloud command that fixes a finding of rule ruleID on t, or "" when the
// fix is not one command.
func Command(ruleID string, t Target) string {
	proj := " --project=" + t.Project
	sub := inventory.ShortName(t.Subscription)
	dlq := inventory.ShortName(t.Subscription) + ".dlq"
	// A DLQ subscription never expires and keeps dead letters for the least retention the
	// stack config accepts for one (spec.MinDLQRetention, EP013's default minimum).
	retention := "--message-retention-duration=" + spec.FormatDuration(spec.MinDLQRetention)
	dlqSub := " --expiration-period=never " + retention + proj
	// A subscription dead-letters after the stack config's default attempts (EP002's range holds it).
	attempts := "--max-delivery-attempts=" + strconv.Itoa(spec.DefaultMaxDeliveryAttempts)
	switch ruleID {
	case "EP001", "EP004":
		if sub == "" {
			return ""
		}
		cmds := []string{}
		if ruleID == "EP001" {
			cmds = append(cmds,
				"gcloud pubsub topics create "+dlq+proj,
				"gcloud pubsub subscriptions create "+dlq+"-sub --topic="+dlq+dlqSub)
		}
		cmds = append(cmds, "gcloud pubsub subscriptions update "+sub+" --dead-letter-topic="+inventory.TopicName(t.Project, dlq)+" "+attempts+proj)
		return strings.Join(cmds, " && ")
	case "EP002":
		return subUpdate(sub, attempts, proj)
	case "EP003":
		return subUpdate(sub, "--min-retry-delay="+spec.Seconds(spec.DefaultMinBackoff)+" --max-retry-delay="+spec.Seconds(spec.DefaultMaxBackoff), proj)
	case "EP005":
		if t.DeadLetterTopic == "" {
			return ""
		}
		d := inventory.ShortName(t.DeadLetterTopic)
		return "gcloud pubsub subscriptions create " + d + "-sub --topic=" + t.DeadLetterTopic + dlqSub
	case "EP006":
		if t.DeadLetterTopic == "" {
			return ""
		}
		return "gcloud pubsub topics add-iam-policy-binding " + t.DeadLetterTopic + " --member=" + agent(t) + " --role=roles/pubsub.publisher"
	case "EP007":
		if sub == "" {
			return ""
		}
		return "gcloud pubsub subscriptions add-iam-policy-binding " + sub + " --member=" + agent(t) + " --role=roles/pubsub.subscriber" + proj
	case "EP008":
		return subUpdate(sub, "--push-auth-service-account=PUSH_SA@"+t.Project+".iam.gserviceaccount.com", proj)
	case "EP009":
		return subUpdate(sub, "--push-endpoint=https://SERVICE_URL/PATH", proj)
	case "EP010":
		if t.Service == "" {
			return ""
		}
		svc := t.Service + " --region=" + t.Region + proj
		return "gcloud run services remove-iam-policy-binding " + svc + " --member=allUsers --role=roles/run.invoker; " +
			"gcloud run services remove-iam-policy-binding " + svc + " --member=allAuthenticatedUsers --role=roles/run.invoker; " +
			"gcloud run services update " + svc + " --invoker-iam-check"
	case "EP011", "EP012":
		return subUpdate(sub, "--expiration-period=never", proj)
	case "EP013":
		return subUpdate(sub, retention, proj)
	}
	return ""
}

func subUpdate(sub, flags, proj string) string {
	if sub == "" {
		return ""
	}
	return "gcloud pubsub subscriptions update " + sub + " " + flags + proj
}

// agent is the IAM member of the project's Pub/Sub service agent; with the number unknown,
// a shell expansion that looks it up.
func agent(t Target) string {
	num := t.Number
	if num == "" {
		num = "$(gcloud projects describe " + t.Project + " --format='value(projectNumber)')"
	}
	return spec.PubSubAgent(num)
}

// Fix is where a finding of rule ruleID on t owned by o is fixed, with the gcloud command
// when the fix is made by hand (not for resources infrastructure code manages: there the
// code is changed).
func Fix(o Owner, ruleID string, t Target) string {
	where := Where(o, t)
	if o.Kind == Pulumi || o.Kind == Terraform {
		return where
	}
	if cmd := Command(ruleID, t); cmd != "" {
		return where + " Command: " + cmd + "."
	}
	return where
}
