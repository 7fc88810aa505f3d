package gcpstandin

import (
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/eventpipe/eventpipe/consumer/settings"
)

// IAM grants, as Google documents them. A grant takes effect "typically [in] 2 minutes,
// potentially 7 minutes or longer" (cloud.google.com/iam/docs/access-change-propagation),
// in no order among grants, and the provider waits only until the policy it wrote reads
// back (tpgiamresource/iam.go, iamPolicyReadModifyWrite, terraform-provider-google-beta
// v6.49.2). A deployment may rely on a grant only once it has taken effect, so the
// stand-in holds every grant something it creates relies on to be at least the grant
// propagation delay old (DefaultGrantPropagation, Google's typical two minutes) on the
// stands-ins' clock (clock.go), and refuses the create otherwise, saying whether there is
// no grant or a grant too young, and what Google Cloud does then. Some of these the real
// API refuses; the others fail, or lose data, only after the create has succeeded, and
// the stand-in refuses the create in their place (each rule says which):
//
// A Cloud Run service or worker pool (a revision; an update deploys one too), for the
// account it runs as (template.serviceAccount) and its service agent:
//
//   - roles/secretmanager.secretAccessor on each secret its environment reads. The API
//     refuses: Cloud Run checks at deploy time that the revision's account can read them
//     ("Permission denied on secret: … for Revision service account …. The service
//     account used must be granted the 'Secret Manager Secret Accessor' role",
//     terraform-google-modules/terraform-docs-samples#168).
//   - roles/compute.networkUser on a Shared VPC subnet its Direct VPC egress uses, for
//     the Cloud Run service agent of its project. The API refuses
//     (cloud.google.com/run/docs/configuring/shared-vpc-direct-vpc).
//   - roles/cloudsql.client in the project of the Cloud SQL instance whose socket its
//     store (EVENTPIPE_STORE) connects through. The revision is never ready: the Cloud SQL
//     connection Cloud Run makes for the revision needs the role
//     (cloud.google.com/sql/docs/postgres/connect-run, "Cloud SQL Client"), the consumer
//     opens its PostgreSQL store at start (pgstore.Open connects and creates its schema)
//     and exits when it cannot, so its startup probe never passes and the create fails,
//     leaving the service behind.
//   - roles/datastore.user in the project of its Firestore store. Run time: the consumer
//     opens Firestore without a call, so the revision becomes ready, and every
//     transaction it runs gets PERMISSION_DENIED ("Missing or insufficient permissions",
//     cloud.google.com/firestore/docs/security/iam) until the grant takes effect: each
//     message meanwhile is nacked, and once its subscription counts delivery attempts,
//     dead-lettered after maxDeliveryAttempts.
//   - roles/cloudtrace.agent in its project, for a revision with the Google-Built
//     OpenTelemetry Collector, which exports spans with the revision's identity
//     (cloud.google.com/trace/docs/iam: writing spans needs cloudtrace.traces.patch). Run
//     time: the exports get PERMISSION_DENIED and the spans are dropped.
//   - roles/pubsub.subscriber on each subscription it pulls (EVENTPIPE_PULL_SUBSCRIPTIONS).
//     Run time: its streaming pull gets PERMISSION_DENIED
//     (cloud.google.com/pubsub/docs/access-control); the eventpipe consumer retries that
//     for 5 minutes at start (pull.DefaultStartupRetry) and then exits, and IAM may take
//     7 minutes or longer.
//   - For each subscription it pulls that has a dead-letter policy, the Pub/Sub service
//     agent's roles/pubsub.publisher on the dead-letter topic and roles/pubsub.subscriber
//     on the subscription. Run time: "Pub/Sub counts delivery attempts only when the
//     dead-letter topic is properly configured and includes the correct IAM permissions"
//     (cloud.google.com/pubsub/docs/handling-failures): until both take effect nothing is
//     dead-lettered, silently.
//
// A push subscription, which delivers from its create on:
//
//   - roles/run.invoker on the Cloud Run service its endpoint names, for the account its
//     OIDC tokens name (cloud.google.com/run/docs/triggering/pubsub-push). Run time: Cloud
//     Run answers every push 403 until it takes effect; Pub/Sub retries, and once the
//     subscription counts attempts (its dead-letter grants may take effect first: grants
//     take effect in no order) the messages are dead-lettered.
//   - roles/iam.serviceAccountTokenCreator on that account, for the Pub/Sub service agent:
//     Pub/Sub mints the push tokens as the account, which the agent of a project created
//     before April 8, 2021 needs the role for (cloud.google.com/pubsub/docs/
//     authenticate-push-subscriptions); without it no push is sent. The stand-in requires
//     it of every project, as it cannot tell a project's age.
//   - The service agent's roles/pubsub.publisher on its dead-letter topic (as above).
//
// A subscription with a dead-letter policy, push or pull, also needs the agent's
// publisher grant to exist when it is created (the stand-in's order, not the API's: a
// grant declared after the subscription would leave dead-lettering to chance). The
// agent's subscriber grant is on the subscription itself, so it can only follow it: a
// push subscription delivers before that grant takes effect, meanwhile counts no attempt
// and dead-letters nothing, and loses nothing by it (a failed delivery is retried), which
// is why a push subscription is not held to it.
//
// The grants a stack makes for members outside it (a topic's publishers, an external
// subscription's subscribers, the accounts that call a consumer back) are used by
// nothing the stack creates: they take effect later, and the stand-in has nothing to
// hold to them.

// Google's delays, the stand-in's defaults (EnvAPIPropagation, EnvGrantPropagation).
const (
	// DefaultAPIPropagation is how long an enabled API answers 403 SERVICE_DISABLED.
	// Google gives no figure beyond the 403's "wait a few minutes"; the stand-in takes
	// the minute Terraform's users wait there with time_sleep
	// (googleapis/google-cloud-rust#5444, after the provider's guide to
	// google_project_service).
	DefaultAPIPropagation = time.Minute
	// DefaultGrantPropagation is how long an IAM grant takes to take effect: "typically 2
	// minutes" (cloud.google.com/iam/docs/access-change-propagation).
	DefaultGrantPropagation = 2 * time.Minute
)

// Roles, as Google names them.
const (
	roleSecretAccessor = "roles/secretmanager.secretAccessor"
	roleNetworkUser    = "roles/compute.networkUser"
	roleCloudSQLClient = "roles/cloudsql.client"
	roleDatastoreUser  = "roles/datastore.user"
	roleTraceAgent     = "roles/cloudtrace.agent"
	rolePublisher      = "roles/pubsub.publisher"
	roleSubscriber     = "roles/pubsub.subscriber"
	roleRunInvoker     = "roles/run.invoker"
	roleTokenCreator   = "roles/iam.serviceAccountTokenCreator"
)

// Types of the IAM members that grant a role on one resource.
const (
	typeProjectMember      = "gcp:projects/iAMMember:IAMMember"
	typeSecretMember       = "gcp:secretmanager/secretIamMember:SecretIamMember"
	typeSubnetworkMember   = "gcp:compute/subnetworkIAMMember:SubnetworkIAMMember"
	typeTopicMember        = "gcp:pubsub/topicIAMMember:TopicIAMMember"
	typeSubscriptionMember = "gcp:pubsub/subscriptionIAMMember:SubscriptionIAMMember"
	typeServiceMember      = "gcp:cloudrunv2/serviceIamMember:ServiceIamMember"
	typeAccountMember      = "gcp:serviceaccount/iAMMember:IAMMember"
)

// need is a grant a create relies on: role for member (a whole IAM member,
// serviceAccount:EMAIL) on the resource target, named in the field field of an IAM member
// of type typ, or on the project holding it (a project's grant applies to its resources).
// For a grant on a project, typ is "" and project names it.
type need struct {
	typ, field, target string
	project            string
	role, member       string
	// failure is what Google Cloud does while the grant is missing or young (why says which).
	failure func(why string) error
}

// grantedAt returns when the oldest grant meeting n was made (ok false: none).
func grantedAt(st map[string]Record, n need) (at time.Time, ok bool) {
	for _, r := range st {
		if str(r.State, "role") != n.role || str(r.State, "member") != n.member {
			continue
		}
		onResource := n.typ != "" && r.Type == n.typ && sameResource(str(r.State, n.field), n.target)
		onProject := r.Type == typeProjectMember && (n.project == "" || str(r.State, "project") == n.project)
		if (onResource || onProject) && (!ok || r.Created.Before(at)) {
			at, ok = r.Created, true
		}
	}
	return at, ok
}

// sameResource reports whether two references name one resource: equal, or one the full
// name (projects/P/…/NAME) of the other's bare name.
func sameResource(a, b string) bool {
	return a != "" && b != "" && (a == b || strings.HasSuffix(b, "/"+a) || strings.HasSuffix(a, "/"+b))
}

// require returns the failure of the first need of needs not met at now: no grant, or
// one made less than the grant propagation delay before.
func (s *standin) require(st map[string]Record, needs []need, now time.Time) error {
	for _, n := range needs {
		at, ok := grantedAt(st, n)
		switch {
		case !ok:
			return n.failure("no " + n.role + " grant to " + n.member)
		case now.Sub(at) < s.grantPropagation:
			return n.failure(fmt.Sprintf("%s was granted to %s %s ago; a grant takes effect after %s (cloud.google.com/iam/docs/access-change-propagation)",
				n.role, n.member, now.Sub(at).Round(time.Millisecond), s.grantPropagation))
		}
	}
	return nil
}

// revisionNeeds are the grants a Cloud Run service's or worker pool's revision, in
// project, relies on (see above), in the order the stand-in checks them: what Cloud Run
// checks at deploy time (the Shared VPC subnet, the secrets), then what the consumer
// needs as it starts (the subscriptions it pulls), as it runs (the trace export), and
// for its store.
func (s *standin) revisionNeeds(st map[string]Record, project string, in map[string]any) []need {
	tmpl, _ := in["template"].(map[string]any)
	account := "serviceAccount:" + str(tmpl, "serviceAccount")
	var needs []need
	vpc, _ := tmpl["vpcAccess"].(map[string]any)
	for _, nic := range list(vpc, "networkInterfaces") {
		host, subnet := hostProject(str(nic, "network"), str(nic, "subnetwork"))
		if host == "" || host == project {
			continue
		}
		agent := "serviceAccount:service-" + s.projects[project] + "@serverless-robot-prod.iam.gserviceaccount.com"
		needs = append(needs, need{typ: typeSubnetworkMember, field: "subnetwork", target: subnet, project: host,
			role: roleNetworkUser, member: agent, failure: func(why string) error {
				return fmt.Errorf("googleapi: Error 403: the Cloud Run service agent %s lacks compute.subnetworks.use on Shared VPC subnetwork %s "+
					"of host project %s (%s): grant it roles/compute.networkUser on the subnet", strings.TrimPrefix(agent, "serviceAccount:"), subnet, host, why)
			}})
	}
	for i, c := range list(tmpl, "containers") {
		for j, e := range list(c, "envs") {
			src, _ := e["valueSource"].(map[string]any)
			ref, _ := src["secretKeyRef"].(map[string]any)
			if secret := str(ref, "secret"); secret != "" {
				needs = append(needs, need{typ: typeSecretMember, field: "secretId", target: secret, project: project,
					role: roleSecretAccessor, member: account, failure: func(why string) error {
						return fmt.Errorf("googleapi: Error 13: Revision is not ready and cannot serve traffic. "+
							"spec.template.spec.containers[%d].env[%d].value_from.secret_key_ref.name: Permission denied on secret: "+
							"projects/%s/secrets/%s/versions/%s for Revision service account %s (%s). The service account used must be granted "+
							"the 'Secret Manager Secret Accessor' role (roles/secretmanager.secretAccessor) at the secret, project or higher level.",
							i, j, project, secret, str(ref, "version"), str(tmpl, "serviceAccount"), why)
					}})
			}
		}
	}
	env := func(name string) []map[string]any {
		var out []map[string]any
		for _, c := range list(tmpl, "containers") {
			for _, e := range list(c, "envs") {
				if str(e, "name") == name {
					out = append(out, e)
				}
			}
		}
		return out
	}
	for _, e := range env(settings.PullSubscriptions) {
		for sub := range strings.SplitSeq(str(e, "value"), ",") {
			if sub = strings.TrimSpace(sub); sub != "" {
				needs = append(needs, s.pullNeeds(st, project, sub, account)...)
			}
		}
	}
	for _, c := range list(tmpl, "containers") {
		if strings.Contains(str(c, "image"), "/otelcol-google:") {
			needs = append(needs, need{project: project, role: roleTraceAgent, member: account, failure: func(why string) error {
				return fmt.Errorf("the OpenTelemetry Collector (container %s) exports spans as %s (%s): until the grant takes effect "+
					"Cloud Trace refuses them (PERMISSION_DENIED, cloudtrace.traces.patch) and the spans are dropped", str(c, "name"), account, why)
			}})
		}
	}
	for _, e := range env(settings.Store) {
		needs = append(needs, storeNeeds(st, e, account)...)
	}
	return needs
}

// storeNeeds are the grants the consumer's store (its EVENTPIPE_STORE entry e, a value or
// a secret's) needs for account.
func storeNeeds(st map[string]Record, e map[string]any, account string) []need {
	store := str(e, "value")
	if src, ok := e["valueSource"].(map[string]any); ok {
		key, _ := src["secretKeyRef"].(map[string]any)
		store = secretValue(st, str(key, "secret"))
	}
	if m := cloudSQLSocket.FindStringSubmatch(store); m != nil {
		project, _, _ := strings.Cut(m[1], ":")
		return []need{{project: project, role: roleCloudSQLClient, member: account, failure: func(why string) error {
			return fmt.Errorf("revision not ready: the consumer's store connects through the Cloud SQL instance %s, and Cloud Run's "+
				"connection to it answers 403 notAuthorized (%s): the consumer cannot open its store, exits, and its startup probe never passes", m[1], why)
		}}}
	}
	if u, err := url.Parse(store); err == nil && u.Scheme == "firestore" && u.Host != "" {
		return []need{{project: u.Host, role: roleDatastoreUser, member: account, failure: func(why string) error {
			return fmt.Errorf("the consumer's Firestore store %s would refuse it every transaction with PERMISSION_DENIED "+
				"(Missing or insufficient permissions: %s): each message meanwhile is nacked, and dead-lettered once its subscription counts attempts", store, why)
		}}}
	}
	return nil
}

// pubsubAgent is the Pub/Sub service agent of project.
func (s *standin) pubsubAgent(project string) string {
	return "serviceAccount:service-" + s.projects[project] + "@gcp-sa-pubsub.iam.gserviceaccount.com"
}

// pullNeeds are the grants pulling subscription sub (a full name) as account relies on:
// the account's subscriber grant, and the Pub/Sub agent's dead-letter grants.
func (s *standin) pullNeeds(st map[string]Record, project, sub, account string) []need {
	subProject := project
	if rest, ok := strings.CutPrefix(sub, "projects/"); ok {
		subProject, _, _ = strings.Cut(rest, "/")
	}
	needs := []need{{typ: typeSubscriptionMember, field: "subscription", target: sub, project: subProject,
		role: roleSubscriber, member: account, failure: func(why string) error {
			return fmt.Errorf("the consumer pulls %s as %s (%s): until the grant takes effect its streaming pull gets PERMISSION_DENIED, "+
				"which the eventpipe consumer retries for 5 minutes at start and then exits (IAM may take 7 minutes or longer)", sub, account, why)
		}}}
	for _, r := range st {
		if r.Type != "gcp:pubsub/subscription:Subscription" || !sameResource(str(r.State, "name"), sub) {
			continue
		}
		if dlp, ok := r.State["deadLetterPolicy"].(map[string]any); ok {
			needs = append(needs, s.deadLetterNeeds(subProject, sub, str(dlp, "deadLetterTopic"), true)...)
		}
	}
	return needs
}

// deadLetterNeeds are the Pub/Sub agent's grants for subscription sub (in project) to
// dead-letter to topic: publisher on the topic and, with subscriber, subscriber on sub.
func (s *standin) deadLetterNeeds(project, sub, topic string, subscriber bool) []need {
	agent := s.pubsubAgent(project)
	failure := func(role, on string) func(string) error {
		return func(why string) error {
			return fmt.Errorf("subscription %s dead-letters to %s, and the Pub/Sub service agent has no %s on %s yet (%s): "+
				"until it takes effect Pub/Sub counts no delivery attempt and dead-letters nothing, silently", sub, topic, role, on, why)
		}
	}
	needs := []need{{typ: typeTopicMember, field: "topic", target: topic, project: project, role: rolePublisher, member: agent,
		failure: failure(rolePublisher, topic)}}
	if subscriber {
		needs = append(needs, need{typ: typeSubscriptionMember, field: "subscription", target: sub, project: project,
			role: roleSubscriber, member: agent, failure: failure(roleSubscriber, sub)})
	}
	return needs
}

// pushNeeds are the grants push subscription sub (in project) relies on when it starts
// delivering to service (a Cloud Run service's state) with tokens of account (an email).
func (s *standin) pushNeeds(project, sub string, service map[string]any, account, deadLetterTopic string) []need {
	member := "serviceAccount:" + account
	needs := []need{
		{typ: typeServiceMember, field: "name", target: str(service, "name"), project: str(service, "project"), role: roleRunInvoker, member: member,
			failure: func(why string) error {
				return fmt.Errorf("subscription %s pushes to Cloud Run service %s with tokens of %s (%s): until the grant takes effect "+
					"Cloud Run answers every push 403, and once the subscription counts attempts the messages are dead-lettered", sub, str(service, "name"), account, why)
			}},
		{typ: typeAccountMember, field: "serviceAccountId", target: account, project: project, role: roleTokenCreator, member: s.pubsubAgent(project),
			failure: func(why string) error {
				return fmt.Errorf("subscription %s pushes with tokens of %s, which the Pub/Sub service agent mints (%s): until the grant "+
					"takes effect no push is sent", sub, account, why)
			}},
	}
	if deadLetterTopic != "" {
		needs = append(needs, s.deadLetterNeeds(project, sub, deadLetterTopic, false)...)
	}
	return needs
}

// prerequisites refuses creating (or updating to) rec what the real APIs refuse, or
// what would fail or lose data right after (the package comment).
func (s *standin) prerequisites(st map[string]Record, rec Record) error {
	if s.noChecks {
		return nil
	}
	in := rec.State
	project := str(in, "project")
	if api := API(rec.Type); api != "" && rec.Type != "gcp:projects/service:Service" {
		if err := s.usable(st, api, project, rec.Created); err != nil {
			return err
		}
	}
	switch rec.Type {
	case "gcp:pubsub/subscription:Subscription":
		return s.subscriptionPrerequisites(st, in, rec.Created)
	case "gcp:cloudrunv2/service:Service", "gcp:cloudrunv2/workerPool:WorkerPool":
		if err := runPrerequisites(st, rec.Type, in); err != nil {
			return err
		}
		return s.require(st, s.revisionNeeds(st, project, in), rec.Created)
	case "gcp:monitoring/alertPolicy:AlertPolicy":
		return alertPrerequisites(st, in, rec.Created)
	case "gcp:firestore/field:Field":
		if !s.databaseExists(st, project, str(in, "database")) {
			return fmt.Errorf("googleapi: Error 404: The database %s does not exist for project %s Please visit "+
				"https://console.cloud.google.com/datastore/setup?project=%s to add a Cloud Datastore or Cloud Firestore database.",
				str(in, "database"), project, project)
		}
	case "gcp:firestore/database:Database":
		if s.databaseExists(st, project, str(in, "name")) {
			return fmt.Errorf("googleapi: Error 409: Database already exists. Please use another database_id")
		}
	}
	return nil
}

// subscriptionPrerequisites refuses a subscription whose topic or dead-letter topic does
// not exist, whose dead-letter topic has no publisher grant for the Pub/Sub agent yet,
// or, pushing, whose endpoint is a Cloud Run service that does not exist or whose
// deliveries' grants have not taken effect.
func (s *standin) subscriptionPrerequisites(st map[string]Record, in map[string]any, now time.Time) error {
	project, name := str(in, "project"), str(in, "name")
	if topic := str(in, "topic"); !exists(st, "gcp:pubsub/topic:Topic", project, topic) {
		return fmt.Errorf("googleapi: Error 404: Resource not found (resource=%s): the subscription's topic does not exist", topic)
	}
	var dlq string
	if dlp, ok := in["deadLetterPolicy"].(map[string]any); ok {
		dlq = str(dlp, "deadLetterTopic")
		if !exists(st, "gcp:pubsub/topic:Topic", project, dlq) {
			return fmt.Errorf("googleapi: Error 404: dead-letter topic %s not found", dlq)
		}
		publisher := s.deadLetterNeeds(project, name, dlq, false)[0]
		if _, ok := grantedAt(st, publisher); !ok {
			return fmt.Errorf("the Pub/Sub service agent cannot publish to dead-letter topic %s (no roles/pubsub.publisher grant yet): dead-lettering would fail", dlq)
		}
	}
	push, ok := in["pushConfig"].(map[string]any)
	if !ok {
		return nil
	}
	endpoint := str(push, "pushEndpoint")
	u, err := url.Parse(endpoint)
	if err != nil || !strings.HasSuffix(u.Hostname(), ".run.app") {
		return nil
	}
	for _, r := range st {
		if r.Type == "gcp:cloudrunv2/service:Service" && str(r.State, "uri") != "" && strings.HasPrefix(endpoint, str(r.State, "uri")) {
			oidc, _ := push["oidcToken"].(map[string]any)
			return s.require(st, s.pushNeeds(project, name, r.State, str(oidc, "serviceAccountEmail"), dlq), now)
		}
	}
	return fmt.Errorf("push endpoint %s is no Cloud Run service that exists", endpoint)
}

// databaseExists reports whether the Firestore database name ("(default)" when empty)
// exists in project: made outside the stack, or by a database resource.
func (s *standin) databaseExists(st map[string]Record, project, name string) bool {
	if name == "" {
		name = "(default)"
	}
	for _, db := range s.databases {
		if db == project+"/"+name || (name == "(default)" && db == "*") {
			return true
		}
	}
	for _, r := range st {
		if r.Type == "gcp:firestore/database:Database" && str(r.State, "project") == project && str(r.State, "name") == name {
			return true
		}
	}
	return false
}

// hostProject returns the project a Direct VPC egress interface's network or subnetwork
// names (projects/HOST/…), "" for a bare name (the service's own project), and the
// subnetwork's name.
func hostProject(network, subnetwork string) (host, subnet string) {
	for _, ref := range []string{subnetwork, network} {
		if rest, ok := strings.CutPrefix(ref, "projects/"); ok {
			host, _, _ = strings.Cut(rest, "/")
			break
		}
	}
	subnet = subnetwork
	if subnet == "" {
		subnet = network
	}
	return host, subnet[strings.LastIndex(subnet, "/")+1:]
}
