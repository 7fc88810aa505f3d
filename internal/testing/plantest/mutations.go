package plantest

import "strings"

// Names in the rendered prod stack (`eventpipe render --stack prod`) that the mutations
// edit: the system-events materializer's push subscription and its DLQ subscription.
const (
	SubscriptionType = "gcp:pubsub/subscription:Subscription"
	PushSubscription = "system-events-materializer"
	DLQSubscription  = "system-events-materializer-dlq"
)

// Mutation breaks the rendered prod stack in one way.
type Mutation struct {
	Name string
	// Apply edits the rendered prod stack's preview document.
	Apply func(t TB, p Doc)
	// Want is the only finding the break may cause, as "level:rule id" (deny:EP001).
	Want string
}

// RenderedProdMutations are one break per rule of the rendered prod stack, each caught by
// exactly one rule: every runtime of the rules (eventpipe check, the Pulumi analyzer) must
// report exactly that.
func RenderedProdMutations() []Mutation {
	return []Mutation{
		{"remove deadLetterPolicy", func(t TB, p Doc) {
			delete(p.Inputs(t, SubscriptionType, PushSubscription), "deadLetterPolicy")
			delete(p.State(t, SubscriptionType, PushSubscription)["propertyDependencies"].(map[string]any), "deadLetterPolicy")
		}, "deny:EP001"},
		{"attempts 3", func(t TB, p Doc) {
			p.Inputs(t, SubscriptionType, PushSubscription)["deadLetterPolicy"].(map[string]any)["maxDeliveryAttempts"] = 3
		}, "deny:EP002"},
		{"drop the retry policy", func(t TB, p Doc) {
			delete(p.Inputs(t, SubscriptionType, PushSubscription), "retryPolicy")
		}, "deny:EP003"},
		{"DLQ = source topic", func(t TB, p Doc) {
			st := p.State(t, SubscriptionType, PushSubscription)
			in := st["inputs"].(map[string]any)
			in["deadLetterPolicy"].(map[string]any)["deadLetterTopic"] = in["topic"]
			pd := st["propertyDependencies"].(map[string]any)
			pd["deadLetterPolicy"] = pd["topic"]
		}, "deny:EP004"},
		{"delete the DLQ subscription", func(t TB, p Doc) {
			p.Drop(t, SubscriptionType, DLQSubscription)
		}, "deny:EP005"},
		{"delete the service agent's publisher grant", func(t TB, p Doc) {
			p.Drop(t, "gcp:pubsub/topicIAMMember:TopicIAMMember", PushSubscription+"-dlq-agent-publisher")
		}, "deny:EP006"},
		{"delete the service agent's subscriber grant", func(t TB, p Doc) {
			p.Drop(t, "gcp:pubsub/subscriptionIAMMember:SubscriptionIAMMember", PushSubscription+"-agent-subscriber")
		}, "deny:EP007"},
		{"push without OIDC", func(t TB, p Doc) {
			delete(p.Inputs(t, SubscriptionType, PushSubscription)["pushConfig"].(map[string]any), "oidcToken")
		}, "deny:EP008"},
		{"http push endpoint", func(t TB, p Doc) {
			push := p.Inputs(t, SubscriptionType, PushSubscription)["pushConfig"].(map[string]any)
			push["pushEndpoint"] = strings.Replace(push["pushEndpoint"].(string), "https://", "http://", 1)
		}, "deny:EP009"},
		{"allUsers invoker", func(t TB, p Doc) {
			p.Inputs(t, "gcp:cloudrunv2/serviceIamMember:ServiceIamMember", PushSubscription+"-push-invoker")["member"] = "allUsers"
		}, "deny:EP010"},
		{"subscription expires in prod", func(t TB, p Doc) {
			p.Inputs(t, SubscriptionType, PushSubscription)["expirationPolicy"] = map[string]any{"ttl": "2678400s"}
		}, "deny:EP012"},
		{"DLQ retention one day", func(t TB, p Doc) {
			p.Inputs(t, SubscriptionType, DLQSubscription)["messageRetentionDuration"] = "86400s"
		}, "warn:EP013"},
		{"delete the TTL policy of the leases collection", func(t TB, p Doc) {
			// Each pipeline owns its collections (prefix eventpipe_<pipeline>_) and their TTL fields.
			p.Drop(t, "gcp:firestore/field:Field", "documents-eventpipe_documents_leases")
		}, "warn:EP014"},
		{"explicit DLQ opt-out", func(t TB, p Doc) {
			p.Drop(t, SubscriptionType, DLQSubscription)
			p.Drop(t, "gcp:pubsub/topicIAMMember:TopicIAMMember", PushSubscription+"-dlq-agent-publisher")
			in := p.Inputs(t, SubscriptionType, PushSubscription)
			delete(in, "deadLetterPolicy")
			delete(p.State(t, SubscriptionType, PushSubscription)["propertyDependencies"].(map[string]any), "deadLetterPolicy")
			labels := in["labels"].(map[string]any)
			labels["eventpipe_dlq_opt_out"] = "true"
			labels["eventpipe_dlq_opt_out_reason"] = "replayed_from_source"
		}, "warn:EP015"},
	}
}

// RenderedProdOperationMutations change the planned operation of resources of the rendered
// prod stack. Only runtimes that read a plan's operations (eventpipe check, conftest, opa
// eval) see them: Pulumi hands an analyzer the goal state, not the steps.
func RenderedProdOperationMutations() []Mutation {
	return []Mutation{
		{"replace the subscription (a new filter)", func(t TB, p Doc) {
			p.SetOp(t, SubscriptionType, PushSubscription, "replace")
		}, "deny:EP016"},
		{"delete a subscription and its DLQ subscription", func(t TB, p Doc) {
			p.SetOp(t, SubscriptionType, DLQSubscription, "delete")
			p.SetOp(t, SubscriptionType, PushSubscription, "delete")
		}, "deny:EP016"},
	}
}
