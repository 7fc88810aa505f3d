// Package components holds the Pulumi component resources eventpipe stacks are
// built from: Topic, Subscription (push or pull, always with its dead-letter
// queue), Consumer (the Cloud Run service), FirestoreTTL and Pipeline, which
// composes the others for one named pipeline of a spec.Stack. Program is the
// Pulumi program every stack runs, both under `pulumi up` and in the offline
// renderer.
package components

// Type tokens of the components; policies and tests find resources by them.
const (
	TypeTopic        = "eventpipe:components:Topic"
	TypeSubscription = "eventpipe:components:Subscription"
	TypeConsumer     = "eventpipe:components:Consumer"
	TypeFirestoreTTL = "eventpipe:components:FirestoreTTL"
	TypePipeline     = "eventpipe:components:Pipeline"
)

// IAM roles the components grant.
const (
	RolePublisher    = "roles/pubsub.publisher"
	RoleSubscriber   = "roles/pubsub.subscriber"
	RoleRunInvoker   = "roles/run.invoker"
	RoleTokenCreator = "roles/iam.serviceAccountTokenCreator"
	RoleDatastore    = "roles/datastore.user"
)
