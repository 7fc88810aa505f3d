// Package components holds eventpipe's Pulumi component resources, for this
// repository's stacks and for a platform team's own Pulumi program alike:
// Pipeline (a topic, its subscriptions with their dead-letter queues, the
// Cloud Run consumer, Firestore TTL policies and alerts), and its parts on
// their own: Topic, Subscription (push or pull, always with its dead-letter
// queue, on a topic of the pipeline or one another team owns), Consumer and
// FirestoreTTL.
//
// Each takes Args of Pulumi inputs where a value usually comes from another
// resource (project, topic, image, KMS key, service account, notification
// channels, a secret store URL) and plain Go values elsewhere, applies the
// defaults itself and validates before declaring anything: every problem at
// once, each naming the field, the allowed values and the fix, by the one
// validation of package spec. Args take a pipeline's settings as spec's own
// types (spec.Topic, spec.Consumer, spec.Subscription, …), which a stack
// file decodes by the same names. Args, those settings and the components'
// outputs carry `pulumi` tags, so they are also the input and output types a
// component provider serves to other languages.
//
// Program is the Pulumi program of the repository's stacks: it reads and
// validates the stack config (package spec) and declares a Pipeline of each
// configured pipeline from its validated settings, under `pulumi up` and in
// the offline renderer.
package components

import (
	"strings"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// Type tokens of the components (package eventpipe, module index); policies
// and tests find resources by them.
const (
	TypeTopic        = "eventpipe:index:Topic"
	TypeSubscription = "eventpipe:index:Subscription"
	TypeConsumer     = "eventpipe:index:Consumer"
	TypeFirestoreTTL = "eventpipe:index:FirestoreTTL"
	TypePipeline     = "eventpipe:index:Pipeline"
)

// IAM roles the components grant.
const (
	RolePublisher      = "roles/pubsub.publisher"
	RoleSubscriber     = "roles/pubsub.subscriber"
	RoleRunInvoker     = "roles/run.invoker"
	RoleTokenCreator   = "roles/iam.serviceAccountTokenCreator"
	RoleDatastore      = "roles/datastore.user"
	RoleSecretAccessor = "roles/secretmanager.secretAccessor"
	// RoleCloudSQLClient lets the consumer connect to its Cloud SQL instances.
	RoleCloudSQLClient = "roles/cloudsql.client"
)

// formerType is the token stacks deployed before the components became a
// Pulumi package recorded for component type typ (eventpipe:components:X).
func formerType(typ string) string { return strings.Replace(typ, ":index:", ":components:", 1) }

// register registers component c of type typ under name, with an alias to
// its former token: the engine then finds every resource a stack deployed
// under the old token (children inherit the alias) and keeps it, instead of
// deleting and re-creating topics and subscriptions with their backlog.
func register(ctx *pulumi.Context, typ, name string, c pulumi.ComponentResource, opts []pulumi.ResourceOption) error {
	opts = append(opts[:len(opts):len(opts)], pulumi.Aliases([]pulumi.Alias{{Type: pulumi.String(formerType(typ))}}))
	return ctx.RegisterComponentResource(typ, name, c, opts...)
}
