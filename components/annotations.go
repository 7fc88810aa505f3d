// Code generated from the doc comments by internal/testing/annotategen; DO NOT EDIT.

package components

import "github.com/eventpipe/eventpipe/internal/annotate"

// Annotate describes Consumer and its fields for a component provider's schema.
func (x *Consumer) Annotate(a annotate.Annotator) {
	a.SetToken("index", "Consumer")
	a.Describe(x, "Consumer is the Cloud Run v2 service that runs the eventpipe consumer,\nwith least privilege:\n\n  - its own service account (or the one given), granted only what its\n    store needs: roles/datastore.user on the project of a Firestore store,\n    roles/secretmanager.secretAccessor on the secret holding a store URL\n    with a password; pull subscriptions grant it roles/pubsub.subscriber;\n  - a store URL with a password kept in Secret Manager and read from there\n    (valueSource.secretKeyRef), never written into the service;\n  - restricted ingress (internal by default; Pub/Sub push from the same\n    project is internal traffic) and no public invoker: only the push\n    service accounts get roles/run.invoker, from their Subscription;\n  - the push OIDC audience registered as a custom audience, so Cloud Run\n    accepts the tokens, and passed to the consumer to check them again;\n  - a request timeout equal to the push ack deadline, so Pub/Sub does not\n    redeliver while a request is still running;\n  - sizes Cloud Run accepts (validated), the execution environment set\n    explicitly, GOMEMLIMIT from the memory limit, and a request concurrency\n    (and pull flow control) no higher than memory holds for messages of\n    the maximum size;\n  - startup and liveness probes on the consumer's health endpoint;\n  - for pulling consumers, CPU that is always allocated, because pulling\n    happens outside requests;\n  - deletion protection set explicitly: on unless protect is false.")
	a.Describe(&x.URI, "The service URL (empty on a worker pool, which has none).")
	a.Describe(&x.ServiceName, "The Cloud Run service (or worker pool) name.")
	a.Describe(&x.ServiceAccount, "The email of the account the consumer runs as.")
	a.Describe(&x.RequestConcurrency, "The request concurrency the service got: the configured one, or the lower number of maximum-size messages its memory holds.")
}

// Annotate describes ConsumerArgs and its fields for a component provider's schema.
func (x *ConsumerArgs) Annotate(a annotate.Annotator) {
	a.SetToken("index", "ConsumerArgs")
	a.Describe(x, "ConsumerArgs configure a Consumer on its own (a Pipeline declares its\nconsumer from PipelineArgs.Consumer).")
	a.Describe(&x.Project, "The GCP project id the service is created in.")
	a.Describe(&x.Region, "The Cloud Run region (default europe-west1).")
	a.Describe(&x.Environment, "Labels the service eventpipe_env and qualifies the consumer's records (default: the stack name).")
	a.Describe(&x.Labels, "Extra GCP labels on the service.")
	a.Describe(&x.Protect, "Turns on Cloud Run deletion protection (default true).")
	a.Describe(&x.TraceCollector, "Adds the OpenTelemetry Collector as a sidecar, which the consumer exports its traces to Cloud Trace through (default false).")
	a.Describe(&x.Consumer, "The service's settings.")
	a.Describe(&x.PushAccounts, "The emails of the service accounts whose push tokens the consumer accepts.")
	a.Describe(&x.PullSubscriptions, "The full names (projects/P/subscriptions/S) of the subscriptions the consumer pulls.")
	a.Describe(&x.ProjectNumber, "The project's number, which names the Cloud Run service agent a Shared VPC subnet (consumer.vpcAccess in another project) is granted to; needed only then.")
	a.Describe(&x.Apis, "Makes every resource wait for a Project's apis output: the APIs enabled and propagated.")
	a.Describe(&x.GrantPropagation, "How long the consumer's service waits after the roles it needs are granted, for the grants to take effect (default 120s; 0s: no wait).")
}

// Annotate describes FirestoreTTL and its fields for a component provider's schema.
func (x *FirestoreTTL) Annotate(a annotate.Annotator) {
	a.SetToken("index", "FirestoreTTL")
	a.Describe(x, "FirestoreTTL puts a TTL policy on the expiry field of each collection group\nthe consumer writes records with a lifetime into (dedupe, leases, receipts,\npoison), so they do not grow forever. Each is a firestore.Field with a\nnon-nil TtlConfig (a nil one silently disables TTL) and an empty\nIndexConfig, which exempts the field from single-field indexing: a\nmonotonically increasing indexed timestamp would limit write throughput.\nFirestore deletes expired documents within about a day, so the consumer\nstill checks expiry itself.\n\nA Field is one object of the database per (project, database, collection\ngroup, field): declaring it twice makes the second create fail or two\nowners fight over it (and destroying either removes the policy). Each\nPipeline declares the FirestoreTTL of its own collections, which are its\nown because spec gives every pipeline its own collection prefix and\nrejects two pipelines sharing one in a store (spec.PipelineCollectionPrefix\nsays why).")
	a.Describe(&x.FieldNames, "The TTL policies' resource names, by collection.")
}

// Annotate describes FirestoreTTLArgs and its fields for a component provider's schema.
func (x *FirestoreTTLArgs) Annotate(a annotate.Annotator) {
	a.SetToken("index", "FirestoreTTLArgs")
	a.Describe(x, "FirestoreTTLArgs configure a FirestoreTTL.")
	a.Describe(&x.Project, "The GCP project of the database.")
	a.Describe(&x.Database, "The Firestore database id, e.g. \"(default)\".")
	a.Describe(&x.Collections, "The collection groups whose documents expire.")
	a.Describe(&x.Field, "The timestamp field documents expire by (default expireAt, the consumer's).")
	a.Describe(&x.Apis, "Makes every resource wait for a Project's apis output: the APIs enabled and propagated.")
}

// Annotate describes Pipeline and its fields for a component provider's schema.
func (x *Pipeline) Annotate(a annotate.Annotator) {
	a.SetToken("index", "Pipeline")
	a.Describe(x, "Pipeline composes one named pipeline: its source Topic (or an existing\ntopic, with the named publishers' grants), the Consumer service, one\nSubscription per entry of subscriptions (push ones delivering to the\nconsumer's /pubsub/push, pull ones readable by the consumer's account or,\nwhen external, by their subscribers), the FirestoreTTL policies of the\nconsumer's own collections when its store is Firestore, and (unless opted\nout) its alerts.")
	a.Describe(&x.TopicID, "The full name of the source topic, projects/P/topics/T.")
	a.Describe(&x.TopicName, "The source topic's id.")
	a.Describe(&x.ConsumerURI, "The consumer service's URL.")
	a.Describe(&x.ConsumerServiceAccount, "The email of the account the consumer runs as.")
	a.Describe(&x.SubscriptionNames, "The subscription ids, by key.")
	a.Describe(&x.DeadLetterSubscriptions, "The ids of the subscriptions keeping the dead letters, by key (none on a DLQ opt-out).")
}

// Annotate describes PipelineArgs and its fields for a component provider's schema.
func (x *PipelineArgs) Annotate(a annotate.Annotator) {
	a.SetToken("index", "PipelineArgs")
	a.Describe(x, "PipelineArgs configure a Pipeline. Only project, projectNumber,\nconsumer.image and one subscription are required; everything else has\nthe defaults documented on its field.")
	a.Describe(&x.Project, "The GCP project id the pipeline's resources are created in.")
	a.Describe(&x.ProjectNumber, "The project's number; it names the Pub/Sub service agent dead-lettering needs.")
	a.Describe(&x.Region, "The Cloud Run region of the consumer (default europe-west1).")
	a.Describe(&x.Environment, "Labels every resource eventpipe_env, names the log-based metrics and qualifies the consumer's records (default: the stack name).")
	a.Describe(&x.Labels, "Extra GCP labels on the topic, subscriptions and service.")
	a.Describe(&x.Protect, "Guards the pipeline's state (default true): Pulumi's protect on the topic, subscriptions and dead-letter queues, and Cloud Run deletion protection on the consumer. Set false in short-lived stacks.")
	a.Describe(&x.TraceCollector, "Adds the OpenTelemetry Collector as a sidecar of the consumer, which then exports its traces to Cloud Trace through it (default false).")
	a.Describe(&x.Topic, "The source topic: one the pipeline declares, or an existing one.")
	a.Describe(&x.Consumer, "The Cloud Run service the subscriptions feed.")
	a.Describe(&x.Subscriptions, "The subscriptions on the topic, keyed by a short name unique in the pipeline (1–30 lowercase letters, digits or hyphens). At least one.")
	a.Describe(&x.Alerts, "Configure the pipeline's alerts, on unless opted out.")
	a.Describe(&x.Apis, "Makes every resource wait for a Project's apis output: the APIs enabled and propagated.")
	a.Describe(&x.GrantPropagation, "How long the consumer's service waits after the roles it needs are granted, for the grants to take effect (default 120s; 0s: no wait).")
}

// Annotate describes Project and its fields for a component provider's schema.
func (x *Project) Annotate(a annotate.Annotator) {
	a.SetToken("index", "Project")
	a.Describe(x, "Project is what a project needs before pipelines can be declared in it: the Google\nCloud APIs enabled, Service Usage and Cloud Resource Manager first and every other\nafter them, a wait (a time_sleep of setup.apiPropagation) for the enablements to\npropagate, and optionally the Firestore databases. Its apis output resolves once all\nof that is done: pass it as the apis argument of a Pipeline (or Topic, Subscription,\nConsumer, FirestoreTTL), and every resource the component declares waits for it.")
	a.Describe(&x.Apis, "The APIs enabled, known once they have propagated and the databases exist; pass it as the other components' apis argument.")
}

// Annotate describes ProjectArgs and its fields for a component provider's schema.
func (x *ProjectArgs) Annotate(a annotate.Annotator) {
	a.SetToken("index", "ProjectArgs")
	a.Describe(x, "ProjectArgs configure a Project.")
	a.Describe(&x.Project, "The GCP project id.")
	a.Describe(&x.ManageApis, "Enables the APIs (default true); false where an organisation enables them centrally.")
	a.Describe(&x.Apis, "The Google Cloud APIs to enable (default: pubsub, run, iam, cloudresourcemanager, firestore, logging and monitoring, what a pipeline with a Firestore store and alerts uses). Service Usage and Cloud Resource Manager are enabled first in any case: the provider reads every enablement back through Cloud Resource Manager.")
	a.Describe(&x.FirestoreDatabases, "The ids of Firestore databases to create (\"(default)\" for the project's default one), in setup.firestoreLocation.")
	a.Describe(&x.Setup, "Sets the wait after enabling (apiPropagation) and the Firestore databases' location.")
	a.Describe(&x.Protect, "Puts Pulumi's protect on the Firestore databases (default true): deleting one deletes its data.")
}

// Annotate describes PushTarget and its fields for a component provider's schema.
func (x *PushTarget) Annotate(a annotate.Annotator) {
	a.SetToken("index", "PushTarget")
	a.Describe(x, "PushTarget is the endpoint a push subscription delivers to.")
	a.Describe(&x.Endpoint, "The https URL Pub/Sub POSTs to (for an eventpipe consumer: its URL + /pubsub/push).")
	a.Describe(&x.Audience, "The OIDC audience of the push tokens; the endpoint checks it.")
	a.Describe(&x.Service, "The Cloud Run service the push account gets roles/run.invoker on (optional: an endpoint outside Cloud Run checks the token itself).")
}

// Annotate describes Subscription and its fields for a component provider's schema.
func (x *Subscription) Annotate(a annotate.Annotator) {
	a.SetToken("index", "Subscription")
	a.Describe(x, "Subscription is one subscription on a topic, push or pull, with everything\nreliable delivery needs:\n\n  - a dead-letter topic <subscription>.dlq and a dead-letter policy\n    (maxDeliveryAttempts), so poison messages stop being redelivered;\n  - a subscription on the dead-letter topic that never expires, because a\n    topic without subscriptions silently drops what is published to it;\n  - the Pub/Sub service agent's roles/pubsub.publisher on the DLQ topic and\n    roles/pubsub.subscriber on this subscription, without which\n    dead-lettering silently fails (IAMMember: other members are kept);\n  - an explicit retry policy (without one Pub/Sub redelivers at once) and\n    expiration \"never\" (an idle subscription would otherwise be deleted\n    after 31 days);\n  - for push: a dedicated push service account whose OIDC token (with an\n    explicit audience) authenticates every request, roles/run.invoker for it\n    on the target service, and token creator for the service agent on it;\n  - for pull: roles/pubsub.subscriber for its subscribers.\n\nThe subscription, its DLQ topic and DLQ subscription are protected from\ndeletion unless protect is false: changing a subscription's topic, filter\nor ordering replaces it, and a replaced subscription loses its backlog.\n\nA DLQ opt-out drops the dead-letter resources and records the opt-out and\nits reason as labels so policies can see it.")
	a.Describe(&x.Name, "The subscription id.")
	a.Describe(&x.SubscriptionID, "The full subscription name, projects/P/subscriptions/S.")
	a.Describe(&x.DeadLetterTopic, "The dead-letter topic id (empty on a DLQ opt-out).")
	a.Describe(&x.DeadLetterSubscription, "The id of the subscription keeping the dead letters (empty on a DLQ opt-out).")
	a.Describe(&x.PushServiceAccount, "The email of the push service account (empty for pull).")
}

// Annotate describes SubscriptionArgs and its fields for a component provider's schema.
func (x *SubscriptionArgs) Annotate(a annotate.Annotator) {
	a.SetToken("index", "SubscriptionArgs")
	a.Describe(x, "SubscriptionArgs configure a Subscription on its own, on any topic: a\ntopic of the same program or one another team owns.")
	a.Describe(&x.Project, "The GCP project id the subscription (and its dead-letter queue) is created in.")
	a.Describe(&x.ProjectNumber, "The project's number; it names the Pub/Sub service agent dead-lettering needs.")
	a.Describe(&x.Topic, "The full name of the topic to subscribe to, projects/P/topics/T (it may be in another project).")
	a.Describe(&x.Region, "The region of the push target's Cloud Run service (default europe-west1).")
	a.Describe(&x.Environment, "Labels the resources eventpipe_env (default: the stack name).")
	a.Describe(&x.Labels, "Extra GCP labels on the subscription and its dead-letter queue.")
	a.Describe(&x.Protect, "Protects the subscription and its dead-letter queue from deletion and replacement (default true).")
	a.Describe(&x.Subscription, "The subscription's settings; its name defaults to the component name.")
	a.Describe(&x.Push, "Where a push subscription delivers; required with delivery push.")
	a.Describe(&x.Apis, "Makes every resource wait for a Project's apis output: the APIs enabled and propagated.")
}

// Annotate describes Topic and its fields for a component provider's schema.
func (x *Topic) Annotate(a annotate.Annotator) {
	a.SetToken("index", "Topic")
	a.Describe(x, "Topic is a pipeline's source topic: a pubsub.Topic with labels, message\nretention (so messages can be replayed with seek), optionally a schema\npublishers must satisfy and a customer-managed encryption key, and\nroles/pubsub.publisher for the named producers (IAMMember: other members\nof the topic's policy are kept). It is protected from deletion unless\nprotect is false.")
	a.Describe(&x.ID, "The full topic name, projects/P/topics/T: what a subscription's topic takes.")
	a.Describe(&x.Name, "The topic id.")
}

// Annotate describes TopicArgs and its fields for a component provider's schema.
func (x *TopicArgs) Annotate(a annotate.Annotator) {
	a.SetToken("index", "TopicArgs")
	a.Describe(x, "TopicArgs configure a Topic on its own (a Pipeline declares its topic from\nPipelineArgs.Topic).")
	a.Describe(&x.Project, "The GCP project id the topic is created in.")
	a.Describe(&x.Environment, "Labels the topic eventpipe_env (default: the stack name).")
	a.Describe(&x.Labels, "Extra GCP labels on the topic.")
	a.Describe(&x.Protect, "Protects the topic from deletion and replacement (default true).")
	a.Describe(&x.Topic, "The topic's settings (existing is not allowed: this component declares the topic).")
	a.Describe(&x.Apis, "Makes every resource wait for a Project's apis output: the APIs enabled and propagated.")
}
