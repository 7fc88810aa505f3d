// Code generated from the doc comments by internal/testing/annotategen; DO NOT EDIT.

package spec

import "github.com/eventpipe/eventpipe/internal/annotate"

// Annotate describes Consumer and its fields for a component provider's schema.
func (x *Consumer) Annotate(a annotate.Annotator) {
	a.SetToken("index", "ConsumerSettings")
	a.Describe(x, "Consumer configures the Cloud Run v2 service running the eventpipe consumer.")
	a.Describe(&x.Image, "The consumer container image, by digest (REPO@sha256:<64 hex>) or tag (REPO:TAG). Required.")
	a.Describe(&x.ServiceName, "The Cloud Run service name (default PIPELINE-consumer).")
	a.Describe(&x.RequestTimeout, "The service's request timeout; push ack deadlines equal it (10s–10m, default 60s).")
	a.Describe(&x.Concurrency, "The most messages an instance handles at once, pushed or pulled (1–1000, default 80). When memory cannot hold that many messages of maxMessageBytes, the service gets the lower number that fits (see \"Instance sizing\").")
	a.Describe(&x.MinInstances, "How many instances are kept warm (0–100, default eventpipe:defaults.minInstances, else 0). A pipeline that pulls a subscription must set at least 1: nothing sets it for you, and a stack whose pulling consumer may scale to zero is refused.")
	a.Describe(&x.MaxInstances, "The most instances the service scales to (1–1000, default eventpipe:defaults.maxInstances, else 10).")
	a.Describe(&x.Ingress, "Internal or internal-and-cloud-load-balancing (default internal), or all with callbackAccounts, for callbacks from Cloud Run jobs that do not send them through a VPC: requests then pass only with an OIDC token of a push or callback account (see README, Deploying).")
	a.Describe(&x.CPU, "The CPU limit per instance: \"1\", \"2\", \"4\", \"6\" or \"8\", or below 1 (\"0.5\", \"500m\") with concurrency 1 in the first generation (default \"1\"). See \"Instance sizing\" for what memory each allows.")
	a.Describe(&x.Memory, "The memory limit per instance, 128Mi–32Gi in Mi or Gi, e.g. \"512Mi\" or \"2Gi\" (default \"512Mi\").")
	a.Describe(&x.ExecutionEnvironment, "Cloud Run's execution environment: gen2 (default; at least 512Mi) or gen1 (down to 128Mi, and CPU below 1).")
	a.Describe(&x.MaxMessageBytes, "The largest message the pipeline's producers publish (1–10000000 bytes, default 10000000, Pub/Sub's limit). It sizes the instance: GOMEMLIMIT and the concurrency memory can hold.")
	a.Describe(&x.ServiceAccount, "The email of an existing service account to run the consumer as (default: the pipeline gets its own, PIPELINE-run). It is granted the store, subscriber and secret roles the consumer needs.")
	a.Describe(&x.Routes, "The path of a routes file inside the image (default: the embedded routes).")
	a.Describe(&x.Store, "The consumer's store URL: firestore://PROJECT/DATABASE, postgres://…, bbolt:///PATH or mem:// (default eventpipe:store, else firestore://PROJECT/(default)). Firestore stores get TTL policies.")
	a.Describe(&x.StoreSecret, "A store URL carrying a credential (a PostgreSQL URL with its password), best a secret output; it is kept in a Secret Manager secret the consumer reads, never in the service definition. A stack file sets it as a secret eventpipe:store.")
	a.Describe(&x.CollectionPrefix, "Prepended to the store's collection names: {prefix}dedupe, leases, receipts, poison (default eventpipe_PIPELINE_, the pipeline name with - as _). Unique per store: pipelines never share these collections.")
	a.Describe(&x.Audience, "The OIDC audience of push tokens (default PROJECT/PIPELINE/pubsub-push); it is registered as a custom audience of the service.")
	a.Describe(&x.CallbackAccounts, "The emails of the service accounts (NAME@PROJECT.iam.gserviceaccount.com) whose jobs may call the consumer's callback endpoint; each is granted roles/run.invoker on the service (default none: callbacks are refused).")
	a.Describe(&x.CallbackAudience, "The OIDC audience callers request their tokens for (default: audience); it is registered as a custom audience of the service. Only with callbackAccounts.")
	a.Describe(&x.VPCAccess, "Gives the consumer Direct VPC egress, for a store on a private address (see below).")
	a.Describe(&x.CloudSQLInstances, "Cloud SQL instances (PROJECT:REGION:INSTANCE) the consumer connects to through the Cloud Run Cloud SQL volume at /cloudsql; a postgres store with host=/cloudsql/INSTANCE needs its instance listed. The consumer's account gets roles/cloudsql.client on each instance's project.")
	a.Describe(&x.WorkerPool, "Runs the consumer on a Cloud Run worker pool instead of a service (default false): no HTTP endpoint and no request-driven scaling, for pipelines whose consumer only pulls. It runs minInstances instances; push subscriptions, callbacks and ingress need a service.")
	a.Describe(&x.Handler, "The team's own container beside the consumer (see the Handler section and docs/handlers.md); default none.")
}

// Annotate describes DeadLetter and its fields for a component provider's schema.
func (x *DeadLetter) Annotate(a annotate.Annotator) {
	a.SetToken("index", "DeadLetterSettings")
	a.Describe(x, "DeadLetter configures a subscription's dead-letter queue.")
	a.Describe(&x.Retention, "How long the never-expiring DLQ subscription keeps messages (7d–14d, default eventpipe:defaults.dlqRetention, else 14d).")
	a.Describe(&x.OptOut, "Removes the dead-letter queue; allowed only with a reason, and recorded as labels.")
	a.Describe(&x.Reason, "Explains an opt-out; it becomes the eventpipe_dlq_opt_out_reason label.")
}

// Annotate describes Handler and its fields for a component provider's schema.
func (x *Handler) Annotate(a annotate.Annotator) {
	a.SetToken("index", "HandlerSettings")
	a.Describe(x, "Handler is the team's own container beside the consumer, in any language (docs/handlers.md): the\nconsumer is the service's ingress container and passes the handler, on localhost, the events of routes\nthat name it (once per logical event) and every other request (once per Idempotency-Key).")
	a.Describe(&x.Image, "The handler's container image, by digest (REPO@sha256:<64 hex>) or tag (REPO:TAG). Required.")
	a.Describe(&x.Port, "The port the handler listens on, on localhost (default 8081; its environment has it as HANDLER_PORT). Not 8080, the consumer's.")
	a.Describe(&x.HealthPath, "The handler's health check: the consumer starts once a GET of it answers 2xx (default /healthz).")
	a.Describe(&x.Env, "The handler's environment (names not starting with EVENTPIPE_, and not PORT or HANDLER_PORT: HANDLER_PORT is set to port).")
	a.Describe(&x.CPU, "The handler container's CPU limit, as for the consumer (default \"1\"). The instance has the consumer's and the handler's together.")
	a.Describe(&x.Memory, "The handler container's memory limit, in Mi or Gi (default \"512Mi\").")
}

// Annotate describes PipelineAlerts and its fields for a component provider's schema.
func (x *PipelineAlerts) Annotate(a annotate.Annotator) {
	a.SetToken("index", "AlertSettings")
	a.Describe(x, "PipelineAlerts configure a pipeline's alerts: log-based metrics, alert\npolicies with runbooks, and an ack-ratio SLO per push subscription.\nAlerts are on by default; opting out is explicit and needs a reason.")
	a.Describe(&x.OptOut, "Turns the pipeline's alerts off; allowed only with a reason.")
	a.Describe(&x.Reason, "Explains an opt-out.")
	a.Describe(&x.Team, "The team owning this pipeline's alerts; it labels every policy eventpipe_team (default eventpipe:alerts.team, else unowned).")
	a.Describe(&x.CriticalChannels, "The notification channels (projects/P/notificationChannels/ID) CRITICAL policies notify; a stack file sets them for every pipeline in eventpipe:alerts.channels.")
	a.Describe(&x.WarningChannels, "The notification channels WARNING policies notify; a stack file sets them for every pipeline in eventpipe:alerts.channels.")
	a.Describe(&x.Thresholds, "Override the default alert thresholds; unset values keep the defaults. A stack file sets them for every pipeline in eventpipe:alerts.thresholds.")
}

// Annotate describes Setup and its fields for a component provider's schema.
func (x *Setup) Annotate(a annotate.Annotator) {
	a.SetToken("index", "SetupSettings")
	a.Describe(x, "Setup configures what a project needs before its pipelines can run: the waits for\nAPI enablement and IAM grants to take effect, and the Firestore database, which a\nstack creates when FirestoreLocation is set.")
	a.Describe(&x.APIPropagation, "How long resources wait after their API is enabled, for the enablement to reach every Google Cloud system (default 60s; 0s: no wait, for APIs enabled well before).")
	a.Describe(&x.GrantPropagation, "How long a consumer's service waits after the roles its account and service agent are granted, and a push subscription after the roles its deliveries need, for the grants to take effect (default 120s; 0s: no wait).")
	a.Describe(&x.FirestoreLocation, "Creates the Firestore databases the stack's Firestore stores name in its project, in this location (a region such as europe-west1, or a multi-region: eur3, nam5); unset, they must exist before the first `pulumi up`.")
}

// Annotate describes Subscription and its fields for a component provider's schema.
func (x *Subscription) Annotate(a annotate.Annotator) {
	a.SetToken("index", "SubscriptionSettings")
	a.Describe(x, "Subscription configures one subscription on the pipeline topic, with its dead-letter queue.")
	a.Describe(&x.Delivery, "Push (Pub/Sub calls the consumer) or pull (the consumer, or external subscribers, pull). Required.")
	a.Describe(&x.Name, "The subscription id (default PIPELINE-KEY; a Subscription component's name on its own).")
	a.Describe(&x.AckDeadline, "How long Pub/Sub waits for an ack (10s–10m; pull default 60s, push: the consumer's requestTimeout).")
	a.Describe(&x.MaxDeliveryAttempts, "How many deliveries are tried before dead-lettering (5–100, default eventpipe:defaults.maxDeliveryAttempts, else 5).")
	a.Describe(&x.MinBackoff, "The retry policy's shortest wait (0s–10m, default eventpipe:defaults.minBackoff, else 10s).")
	a.Describe(&x.MaxBackoff, "The retry policy's longest wait (0s–10m, default eventpipe:defaults.maxBackoff, else 10m).")
	a.Describe(&x.Retention, "How long unacknowledged messages are kept (10m–31d, default 7d).")
	a.Describe(&x.Filter, "A Pub/Sub filter expression, at most 256 bytes; it cannot be changed later.")
	a.Describe(&x.Ordering, "Delivers messages with the same ordering key in order (default false); it cannot be changed later.")
	a.Describe(&x.ExactlyOnce, "Enables exactly-once delivery; pull only (default false).")
	a.Describe(&x.PushEndpoint, "Overrides the push URL; push only, https only (default SERVICE_URL/pubsub/push).")
	a.Describe(&x.DeadLetter, "The dead-letter queue (default: one, with the retention below); validation fills it in.")
	a.Describe(&x.Subscribers, "IAM members (serviceAccount:EMAIL, …) granted roles/pubsub.subscriber on a pull subscription, so consumers outside the pipeline can read it.")
	a.Describe(&x.External, "Marks a pull subscription its subscribers read instead of the pipeline's consumer: it is left out of the consumer's EVENTPIPE_PULL_SUBSCRIPTIONS (default false). Needs delivery: pull and subscribers.")
}

// Annotate describes Topic and its fields for a component provider's schema.
func (x *Topic) Annotate(a annotate.Annotator) {
	a.SetToken("index", "TopicSettings")
	a.Describe(x, "Topic configures a pipeline's source topic.")
	a.Describe(&x.Existing, "The full name (projects/P/topics/T) of a topic another team owns: the pipeline subscribes to it and declares no topic of its own. The other topic settings, except publishers, are then its owner's.")
	a.Describe(&x.Name, "The topic id (default: the pipeline or component name).")
	a.Describe(&x.MessageRetention, "How long the topic keeps messages for replay with seek (10m–31d, default 7d).")
	a.Describe(&x.Schema, "An optional Pub/Sub schema publishers must satisfy, projects/P/schemas/S.")
	a.Describe(&x.SchemaEncoding, "JSON or BINARY (default JSON when schema is set).")
	a.Describe(&x.KMSKeyName, "An optional customer-managed key encrypting messages at rest, projects/P/locations/L/keyRings/R/cryptoKeys/K.")
	a.Describe(&x.Publishers, "IAM members (serviceAccount:EMAIL, group:…) granted roles/pubsub.publisher on the topic: the producers allowed to publish to it.")
}

// Annotate describes VPCAccess and its fields for a component provider's schema.
func (x *VPCAccess) Annotate(a annotate.Annotator) {
	a.SetToken("index", "VPCAccessSettings")
	a.Describe(x, "VPCAccess is a consumer's Direct VPC egress: its instances get an address\nin subnetwork and send traffic to the VPC by egress.")
	a.Describe(&x.Network, "The VPC network name or full name (projects/P/global/networks/N). Required.")
	a.Describe(&x.Subnetwork, "The subnet in the consumer's region the instances take addresses from (default: the subnet named like the network).")
	a.Describe(&x.Tags, "Network tags on the instances, for firewall rules.")
	a.Describe(&x.Egress, "PRIVATE_RANGES_ONLY (default: only private addresses go through the VPC) or ALL_TRAFFIC.")
}
