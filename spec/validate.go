package spec

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/eventpipe/eventpipe/internal/durations"
	"github.com/eventpipe/eventpipe/internal/gcpname"
)

// Patterns of the names Google Cloud accepts.
var (
	projectNumberPattern = regexp.MustCompile(`^[1-9][0-9]{0,19}$`)
	regionPattern        = regexp.MustCompile(`^[a-z]+-[a-z]+[0-9]+$`)
	pipelineNamePattern  = regexp.MustCompile(`^[a-z][a-z0-9-]{0,23}[a-z0-9]$`)
	subKeyPattern        = regexp.MustCompile(`^[a-z][a-z0-9-]{0,29}$`)
	schemaPattern        = regexp.MustCompile(`^projects/[^/]+/schemas/[^/]+$`)
	kmsPattern           = regexp.MustCompile(`^projects/[^/]+/locations/[^/]+/keyRings/[^/]+/cryptoKeys/[^/]+$`)
	memberPattern        = regexp.MustCompile(`^((serviceAccount|user|group|domain):[^\s:]+|principal(Set)?://\S+)$`)
	accountEmailPattern  = regexp.MustCompile(`^[a-z0-9][a-z0-9.-]*@[a-z0-9][a-z0-9.-]*\.gserviceaccount\.com$`)
	memoryPattern        = regexp.MustCompile(`^[1-9][0-9]*(Mi|Gi)$`)
	prefixPattern        = regexp.MustCompile(`^[a-z][a-z0-9_]{0,39}$`)
	labelKeyPattern      = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,62}$`)
	labelValuePattern    = regexp.MustCompile(`^[a-z0-9_-]{0,63}$`)
)

// maxUserLabels leaves room under GCP's 64 labels per resource for eventpipe's own.
const maxUserLabels = 59

// validate fills every default into s and records every invalid value.
func validate(c *collector, s *Stack) {
	root := Namespace + ":"
	validateScope(c, s, true)
	checkChannels(c, root+KeyNotificationChannels, s.NotificationChannels)
	validateSetup(c, root+KeySetup, &s.Setup)
	if len(s.Pipelines) == 0 {
		c.add("", root+KeyPipelines, "", "at least one pipeline", "declare eventpipe:pipelines as a mapping of pipeline name to its settings")
	}
	for _, name := range SortedKeys(s.Pipelines) {
		p := s.Pipelines[name]
		path := root + KeyPipelines + "." + name
		if p == nil {
			c.add(name, path, "null", "a pipeline mapping", "give the pipeline at least a consumer and subscriptions")
			continue
		}
		p.Name = name
		validatePipeline(c, s, p, path)
	}
	validateAlerts(c, s)
	checkUniqueNames(c, s)
}

// ValidateTopic completes and checks s's scope (project, region,
// environment) and p.Topic on its own, the way Validate checks them inside
// a stack; topic errors name paths below path. The Topic component calls it.
func ValidateTopic(s *Stack, p *Pipeline, path string) Errors {
	c := &collector{}
	validateScope(c, s, false)
	validateTopic(c, p, path)
	return c.errors()
}

// ValidateConsumer completes and checks s's scope, p's name and p.Consumer
// on its own (p.Subscriptions say whether it pulls; its store defaults to
// s.Store, then to Firestore in s.Project); consumer errors name paths below
// path. The Consumer component calls it.
func ValidateConsumer(s *Stack, p *Pipeline, path string) Errors {
	c := &collector{}
	validateScope(c, s, false)
	validateName(c, p, "name")
	validateConsumer(c, s, p, path)
	return c.errors()
}

// ValidateSubscription completes and checks s's scope and sub, a
// subscription of p, on its own; sub.Key must be set, and sub.Name when p
// has no name to derive it from. Subscription errors name paths below path.
// The Subscription component calls it.
func ValidateSubscription(s *Stack, p *Pipeline, sub *Subscription, path string) Errors {
	c := &collector{}
	validateScope(c, s, sub.HasDLQ() || sub.Push())
	validateSubscription(c, s, p, sub, path)
	return c.errors()
}

// validateScope fills and checks what every part of a stack shares:
// project, region, environment, store and defaults, and the project number
// when needNumber (it names the Pub/Sub service agent dead-lettering needs).
func validateScope(c *collector, s *Stack, needNumber bool) {
	root := Namespace + ":"
	switch {
	case s.Project == "":
		c.add("", root+KeyProject, "", "a GCP project id", "set the id of the project to deploy into")
	case !gcpname.ProjectID(s.Project):
		c.add("", root+KeyProject, strconv.Quote(s.Project), "6–30 lowercase letters, digits or hyphens, starting with a letter",
			"use the project id (not the display name) shown by `gcloud projects list`")
	}
	if needNumber && !projectNumberPattern.MatchString(s.ProjectNumber) {
		c.add("", root+KeyProjectNumber, quoteOrEmpty(s.ProjectNumber), "the numeric project number",
			"copy PROJECT_NUMBER from `gcloud projects describe PROJECT`; it names the Pub/Sub service agent that dead-lettering needs")
	}
	if s.Region == "" {
		s.Region = DefaultRegion
	} else if !regionPattern.MatchString(s.Region) {
		c.add("", root+KeyRegion, strconv.Quote(s.Region), "a Cloud Run region such as europe-west1", "set a region name from `gcloud run regions list`")
	}
	if s.Env == "" {
		s.Env = s.Name
	}
	if !labelValuePattern.MatchString(s.Env) || s.Env == "" {
		c.add("", root+KeyEnv, quoteOrEmpty(s.Env), "a label value: lowercase letters, digits, _ or -, at most 63 characters",
			"use a short lowercase name such as dev, staging or prod")
	}
	if s.Store != "" {
		checkStore(c, "", root+KeyStore, s.Store, s.StoreSecret)
	}
	validateDefaults(c, root+KeyDefaults, &s.Defaults)
}

// validateName checks the name of pipeline p, which prefixes its service
// account ids.
func validateName(c *collector, p *Pipeline, path string) {
	if !pipelineNamePattern.MatchString(p.Name) {
		c.add(p.Name, path, strconv.Quote(p.Name), "2–25 lowercase letters, digits or hyphens, starting with a letter",
			"rename the pipeline key; it prefixes service account ids, which GCP limits to 30 characters")
	}
}

func validateDefaults(c *collector, path string, d *Defaults) {
	d.MaxDeliveryAttempts = intDefault(c, "", path, d.MaxDeliveryAttempts, BoundAt("defaults.maxDeliveryAttempts"))
	minSet, maxSet := written(d.MinBackoff), written(d.MaxBackoff)
	durDefault(c, "", path, &d.MinBackoff, BoundAt("defaults.minBackoff"))
	durDefault(c, "", path, &d.MaxBackoff, BoundAt("defaults.maxBackoff"))
	checkOrder(c, "", path, spanEnd(BoundAt("defaults.minBackoff"), d.MinBackoff, minSet), spanEnd(BoundAt("defaults.maxBackoff"), d.MaxBackoff, maxSet))
	durDefault(c, "", path, &d.DLQRetention, BoundAt("defaults.dlqRetention"))
	minSet, maxSet = written(d.MinInstances), written(d.MaxInstances)
	d.MinInstances = intDefault(c, "", path, d.MinInstances, BoundAt("defaults.minInstances"))
	d.MaxInstances = intDefault(c, "", path, d.MaxInstances, BoundAt("defaults.maxInstances"))
	checkOrder(c, "", path, countEnd(BoundAt("defaults.minInstances"), *d.MinInstances, minSet), countEnd(BoundAt("defaults.maxInstances"), *d.MaxInstances, maxSet))
	if d.Protect == nil {
		d.Protect = ptr(true)
	}
}

func ptr[T any](v T) *T { return &v }

func validatePipeline(c *collector, s *Stack, p *Pipeline, path string) {
	validateName(c, p, path)
	if n := len(p.Labels); n > maxUserLabels {
		c.add(p.Name, path+".labels", fmt.Sprintf("(%d labels)", n), fmt.Sprintf("at most %d labels (GCP allows 64 per resource; eventpipe sets up to 5)", maxUserLabels),
			"drop the labels that are not needed for billing or ownership")
	}
	for _, k := range SortedKeys(p.Labels) {
		lp := path + ".labels." + k
		if !labelKeyPattern.MatchString(k) {
			c.add(p.Name, lp, strconv.Quote(k), "label keys of lowercase letters, digits, _ or -, starting with a letter, at most 63 characters", "rename the label key")
		} else if strings.HasPrefix(k, "eventpipe_") {
			c.add(p.Name, lp, strconv.Quote(k), "keys not starting with eventpipe_ (eventpipe sets those itself)", "remove the label or rename it")
		}
		if !labelValuePattern.MatchString(p.Labels[k]) {
			c.add(p.Name, lp, strconv.Quote(p.Labels[k]), "label values of lowercase letters, digits, _ or -, at most 63 characters", "lowercase the value and replace other characters with -")
		}
	}
	if p.Protect == nil {
		p.Protect = ptr(*s.Defaults.Protect)
	}
	validateTopic(c, p, path+".topic")
	validateConsumer(c, s, p, path+".consumer")
	if len(p.Subscriptions) == 0 {
		c.add(p.Name, path+".subscriptions", "", "at least one subscription", "add a subscription with delivery: push or delivery: pull; a topic without subscriptions drops every message")
	}
	for _, key := range SortedKeys(p.Subscriptions) {
		sub := p.Subscriptions[key]
		sp := path + ".subscriptions." + key
		if sub == nil {
			c.add(p.Name, sp, "null", "a subscription mapping", "set at least delivery: push or delivery: pull")
			continue
		}
		sub.Key = key
		validateSubscription(c, s, p, sub, sp)
	}
}

func validateTopic(c *collector, p *Pipeline, path string) {
	t := &p.Topic
	checkMembers(c, p.Name, path+".publishers", t.Publishers, "roles/pubsub.publisher on the topic")
	if Text(t.Existing) != "" {
		validateExistingTopic(c, p, path)
		return
	}
	if t.Name == "" {
		t.Name = p.Name
	}
	checkPubSubName(c, p.Name, path+".name", t.Name)
	durDefault(c, p.Name, path, &t.MessageRetention, BoundAt("pipelines.*.topic.messageRetention"))
	switch {
	case t.Schema == "" && t.SchemaEncoding != "":
		c.add(p.Name, path+".schemaEncoding", strconv.Quote(t.SchemaEncoding), "only together with topic.schema", "set topic.schema or remove schemaEncoding")
	case t.Schema != "" && !schemaPattern.MatchString(t.Schema):
		c.add(p.Name, path+".schema", strconv.Quote(t.Schema), "projects/PROJECT/schemas/SCHEMA", "use the schema's full resource name")
	}
	if t.Schema != "" {
		if t.SchemaEncoding == "" {
			t.SchemaEncoding = "JSON"
		}
		if t.SchemaEncoding != "JSON" && t.SchemaEncoding != "BINARY" {
			c.add(p.Name, path+".schemaEncoding", strconv.Quote(t.SchemaEncoding), "JSON or BINARY", "write JSON or BINARY in capitals")
		}
	}
	if key := Text(t.KMSKeyName); key != "" && !kmsPattern.MatchString(key) {
		c.add(p.Name, path+".kmsKeyName", strconv.Quote(key), "projects/P/locations/L/keyRings/R/cryptoKeys/K", "use the key's full resource name (not a key version)")
	}
}

// validateExistingTopic checks a topic the pipeline subscribes to but does
// not own: its full name, and no setting only its owner can make. Name is
// filled with the topic's id.
func validateExistingTopic(c *collector, p *Pipeline, path string) {
	t := &p.Topic
	project, id, ok := gcpname.Topic(Text(t.Existing))
	if !ok || !gcpname.ProjectID(project) || !gcpname.PubSubID(id) {
		c.add(p.Name, path+".existing", strconv.Quote(Text(t.Existing)), "projects/PROJECT/topics/TOPIC",
			"use the topic's full name, as `gcloud pubsub topics describe TOPIC --project PROJECT --format='value(name)'` prints it")
	}
	owned := []struct {
		key, value string
	}{{"name", t.Name}, {"messageRetention", t.MessageRetention}, {"schema", t.Schema}, {"schemaEncoding", t.SchemaEncoding}, {"kmsKeyName", Text(t.KMSKeyName)}}
	for _, o := range owned {
		if o.value != "" {
			c.add(p.Name, path+"."+o.key, strconv.Quote(o.value), "only on a topic the pipeline declares (not with topic.existing)",
				"remove it: the existing topic's owner sets it")
		}
	}
	if ok {
		t.Name = id
	}
}

// checkMembers reports IAM members that are malformed or listed twice;
// grant says what they are given.
func checkMembers(c *collector, pipeline, path string, members []string, grant string) {
	checkEach(c, pipeline, path, members, memberPattern.MatchString, "each member once",
		"an IAM member such as serviceAccount:NAME@PROJECT.iam.gserviceaccount.com, group:EMAIL or user:EMAIL", "prefix the email with its kind; these members get "+grant)
}

// checkEach reports each entry of the list at path that ok refuses, with
// allowed and fix, and, unless once is "", each entry listed again, with
// once as what is allowed.
func checkEach(c *collector, pipeline, path string, list []string, ok func(string) bool, once, allowed, fix string) {
	seen := map[string]bool{}
	for i, v := range list {
		switch at := fmt.Sprintf("%s[%d]", path, i); {
		case !ok(v):
			c.add(pipeline, at, strconv.Quote(v), allowed, fix)
		case once != "" && seen[v]:
			c.add(pipeline, at, strconv.Quote(v), once, "remove the duplicate")
		}
		seen[v] = true
	}
}

func validateConsumer(c *collector, s *Stack, p *Pipeline, path string) {
	k := &p.Consumer
	if e := CheckImage(Text(k.Image)); e != nil {
		c.add(p.Name, path+".image", e.Value, e.Allowed, e.Fix)
	}
	derived := k.ServiceName == ""
	if derived {
		k.ServiceName = p.Name + "-consumer"
	}
	// A derived name is only wrong if the pipeline name is, which is reported already.
	if !gcpname.RunService(k.ServiceName) && (!derived || pipelineNamePattern.MatchString(p.Name)) {
		c.add(p.Name, path+".serviceName", strconv.Quote(k.ServiceName), "1–49 lowercase letters, digits or hyphens, starting with a letter", "choose a shorter lowercase service name")
	}
	durDefault(c, p.Name, path, &k.RequestTimeout, BoundAt("pipelines.*.consumer.requestTimeout"))
	k.Concurrency = intDefault(c, p.Name, path, k.Concurrency, BoundAt("pipelines.*.consumer.concurrency"))
	minSet, maxSet := written(k.MinInstances), written(k.MaxInstances)
	minB, maxB := BoundAt("pipelines.*.consumer.minInstances"), BoundAt("pipelines.*.consumer.maxInstances")
	k.MinInstances = intDefault(c, p.Name, path, k.MinInstances, inherit(minB, int64(*s.Defaults.MinInstances)))
	k.MaxInstances = intDefault(c, p.Name, path, k.MaxInstances, inherit(maxB, int64(*s.Defaults.MaxInstances)))
	checkOrder(c, p.Name, path, countEnd(minB, *k.MinInstances, minSet), countEnd(maxB, *k.MaxInstances, maxSet))
	switch k.Ingress {
	case "":
		k.Ingress = IngressInternal
	case IngressInternal, IngressInternalLB:
	case IngressAll, "INGRESS_TRAFFIC_ALL":
		if k.Ingress != IngressAll || len(k.CallbackAccounts) == 0 {
			c.add(p.Name, path+".ingress", strconv.Quote(k.Ingress), IngressInternal+" or "+IngressInternalLB+" ("+IngressAll+" only with callbackAccounts)",
				"use internal: Pub/Sub push from the same project is internal traffic, and the consumer must not be reachable from the internet; "+
					"ingress: all is for callbacks from Cloud Run jobs without VPC egress, with callbackAccounts set, so OIDC tokens guard it")
		}
	default:
		c.add(p.Name, path+".ingress", strconv.Quote(k.Ingress), IngressInternal+" or "+IngressInternalLB, "pick one of the allowed values")
	}
	validateLimits(c, p.Name, path, &k.CPU, &k.Memory)
	for _, sub := range p.Subscriptions {
		if sub != nil && sub.ConsumerPulls() && *k.MinInstances < 1 {
			c.add(p.Name, path+".minInstances", strconv.Itoa(*k.MinInstances), "at least 1 when the pipeline has a pull subscription",
				"set consumer.minInstances: 1 (or more); a pull consumer scaled to zero never pulls, so messages wait until they are dead-lettered")
			break
		}
	}
	validateSize(c, s, p, path)
	validateHandler(c, p, path+".handler")
	checkInstance(c, p, path, s.Traced())
	if account := Text(k.ServiceAccount); account != "" && !accountEmailPattern.MatchString(account) {
		c.add(p.Name, path+".serviceAccount", strconv.Quote(account), "a service account email, NAME@PROJECT.iam.gserviceaccount.com",
			"use the account's email (not its member string or unique id), or remove it so the pipeline gets its own account")
	}
	if k.Routes != "" && !strings.HasPrefix(k.Routes, "/") {
		c.add(p.Name, path+".routes", strconv.Quote(k.Routes), "an absolute path inside the image", "write the routes file path starting with /, or remove it to use the embedded routes")
	}
	if k.Store == "" {
		if s.Store != "" {
			k.Store = s.Store
		} else {
			k.Store = "firestore://" + s.Project + "/(default)"
		}
	} else {
		checkStore(c, p.Name, path+".store", k.Store, false)
	}
	if k.CollectionPrefix == "" {
		k.CollectionPrefix = PipelineCollectionPrefix(p.Name)
	} else if !prefixPattern.MatchString(k.CollectionPrefix) {
		c.add(p.Name, path+".collectionPrefix", strconv.Quote(k.CollectionPrefix), "lowercase letters, digits and _, starting with a letter, at most 40 characters", "use a prefix such as eventpipe_")
	}
	if k.Audience == "" {
		k.Audience = s.Project + "/" + p.Name + "/pubsub-push"
	}
	checkEach(c, p.Name, path+".callbackAccounts", k.CallbackAccounts, accountEmailPattern.MatchString, "",
		"a service account email, NAME@PROJECT.iam.gserviceaccount.com", "write the calling job's service account email (without serviceAccount:)")
	switch {
	case len(k.CallbackAccounts) == 0 && k.CallbackAudience != "":
		c.add(p.Name, path+".callbackAudience", strconv.Quote(k.CallbackAudience), "only with callbackAccounts",
			"list the service accounts that may call back in callbackAccounts, or remove callbackAudience")
	case len(k.CallbackAccounts) > 0 && k.CallbackAudience == "":
		k.CallbackAudience = k.Audience
	}
	validateNetwork(c, p, path)
}

// validateSubscription fills defaults and checks one subscription.
func validateSubscription(c *collector, s *Stack, p *Pipeline, sub *Subscription, path string) {
	switch sub.Delivery {
	case DeliveryPush, DeliveryPull:
	case "":
		c.add(p.Name, path+".delivery", "", "push or pull", "set delivery: push (Pub/Sub calls the consumer) or delivery: pull (the consumer pulls)")
	default:
		c.add(p.Name, path+".delivery", strconv.Quote(sub.Delivery), "push or pull", "write push or pull in lowercase")
	}
	if !subKeyPattern.MatchString(sub.Key) {
		c.add(p.Name, path, strconv.Quote(sub.Key), "1–30 lowercase letters, digits or hyphens, starting with a letter", "rename the subscription key")
	}
	if sub.Name == "" {
		sub.Name = p.Name + "-" + sub.Key
	}
	nameOK := checkPubSubName(c, p.Name, path+".name", sub.Name)
	switch timeout, ack := p.Consumer.RequestTimeout, sub.AckDeadline; {
	case sub.Push() && ack == "" && timeout != "":
		// Follows the consumer's request timeout, which is checked there.
		sub.AckDeadline = timeout
	case sub.Push() && durInRange(ack, MinAckDeadline, MaxAckDeadline) && durInRange(timeout, MinAckDeadline, MaxAckDeadline) && Length(ack) != Length(timeout):
		c.add(p.Name, path+".ackDeadline", strconv.Quote(ack), fmt.Sprintf("the consumer's requestTimeout (%s)", timeout),
			"remove ackDeadline (push subscriptions follow consumer.requestTimeout) or set both to the same value; otherwise Pub/Sub redelivers while the first request still runs")
	default:
		durDefault(c, p.Name, path, &sub.AckDeadline, BoundAt("pipelines.*.subscriptions.*.ackDeadline"))
	}
	minSet, maxSet := written(sub.MinBackoff), written(sub.MaxBackoff)
	minB, maxB := BoundAt("pipelines.*.subscriptions.*.minBackoff"), BoundAt("pipelines.*.subscriptions.*.maxBackoff")
	durInherit(c, p.Name, path, &sub.MinBackoff, minB, s.Defaults.MinBackoff)
	durInherit(c, p.Name, path, &sub.MaxBackoff, maxB, s.Defaults.MaxBackoff)
	checkOrder(c, p.Name, path, spanEnd(minB, sub.MinBackoff, minSet), spanEnd(maxB, sub.MaxBackoff, maxSet))
	durDefault(c, p.Name, path, &sub.Retention, BoundAt("pipelines.*.subscriptions.*.retention"))
	if n := len(sub.Filter); n > MaxFilterBytes {
		c.add(p.Name, path+".filter", fmt.Sprintf("(%d bytes)", n), fmt.Sprintf("at most %d bytes", MaxFilterBytes), "shorten the filter expression; Pub/Sub rejects longer filters")
	}
	if sub.ExactlyOnce && sub.Delivery == DeliveryPush {
		c.add(p.Name, path+".exactlyOnce", "true", "only on delivery: pull", "remove exactlyOnce or switch to delivery: pull; Pub/Sub offers exactly-once delivery only to pull subscribers")
	}
	if sub.PushEndpoint != "" {
		switch {
		case sub.Delivery != DeliveryPush:
			c.add(p.Name, path+".pushEndpoint", strconv.Quote(sub.PushEndpoint), "only on delivery: push", "remove pushEndpoint from the pull subscription")
		case !strings.HasPrefix(sub.PushEndpoint, "https://") || len(sub.PushEndpoint) <= len("https://"):
			c.add(p.Name, path+".pushEndpoint", strconv.Quote(sub.PushEndpoint), "an https:// URL", "use https; OIDC tokens must never travel over plain http")
		}
	}
	checkMembers(c, p.Name, path+".subscribers", sub.Subscribers, "roles/pubsub.subscriber on the subscription")
	switch {
	case len(sub.Subscribers) > 0 && sub.Delivery == DeliveryPush:
		c.add(p.Name, path+".subscribers", fmt.Sprintf("(%d members)", len(sub.Subscribers)), "only on delivery: pull",
			"remove subscribers, or make it a pull subscription; Pub/Sub itself delivers a push subscription")
	case sub.External && sub.Delivery != DeliveryPull:
		c.add(p.Name, path+".external", "true", "only on delivery: pull", "set delivery: pull; external consumers pull what they read")
	case sub.External && len(sub.Subscribers) == 0:
		c.add(p.Name, path+".subscribers", "", "at least one member when external: true",
			"list the accounts of the consumers that read it, e.g. subscribers: [serviceAccount:reader@other-project.iam.gserviceaccount.com]")
	}
	if sub.DeadLetter == nil {
		sub.DeadLetter = &DeadLetter{}
	}
	dl := sub.DeadLetter
	if dl.OptOut {
		if NormaliseLabelValue(dl.Reason) == "" {
			c.add(p.Name, path+".deadLetter.reason", quoteOrEmpty(dl.Reason), "a short reason (it becomes the eventpipe_dlq_opt_out_reason label)",
				"explain why this subscription may lose poison messages, or remove optOut to keep the dead-letter queue")
		}
		if sub.MaxDeliveryAttempts != nil {
			c.add(p.Name, path+".maxDeliveryAttempts", strconv.Itoa(*sub.MaxDeliveryAttempts), "only with a dead-letter queue", "remove maxDeliveryAttempts or remove deadLetter.optOut")
		}
		if dl.Retention != "" {
			c.add(p.Name, path+".deadLetter.retention", strconv.Quote(dl.Retention), "only with a dead-letter queue", "remove deadLetter.retention or remove deadLetter.optOut")
		}
		return
	}
	if dl.Reason != "" {
		c.add(p.Name, path+".deadLetter.reason", strconv.Quote(dl.Reason), "only with deadLetter.optOut: true", "remove the reason, or set optOut: true if the DLQ really must go")
	}
	sub.MaxDeliveryAttempts = intDefault(c, p.Name, path, sub.MaxDeliveryAttempts, inherit(BoundAt("pipelines.*.subscriptions.*.maxDeliveryAttempts"), int64(*s.Defaults.MaxDeliveryAttempts)))
	durInherit(c, p.Name, path+".deadLetter", &dl.Retention, BoundAt("pipelines.*.subscriptions.*.deadLetter.retention"), s.Defaults.DLQRetention)
	if nameOK {
		checkPubSubName(c, p.Name, path+".name", sub.DLQSubscriptionName())
	}
}

// checkUniqueNames reports topic, subscription and service names used twice
// in the stack, and collection prefixes used twice in one shared store.
func checkUniqueNames(c *collector, s *Stack) {
	type owner struct{ pipeline, path string }
	topics, subs, services := map[string]owner{}, map[string]owner{}, map[string]owner{}
	collections := map[string]owner{} // shared store + collection prefix
	claim := func(seen map[string]owner, kind, id string, o owner) bool {
		if prev, dup := seen[id]; dup {
			c.add(o.pipeline, o.path, strconv.Quote(id), kind+" ids unique in the stack (also used at "+prev.path+")", "set a different name")
			return false
		}
		seen[id] = o
		return true
	}
	for _, p := range s.SortedPipelines() {
		if p == nil || p.Name == "" {
			continue
		}
		base := Namespace + ":" + KeyPipelines + "." + p.Name
		if Text(p.Topic.Existing) == "" { // several pipelines may read one existing topic
			claim(topics, "topic", p.Topic.Name, owner{p.Name, base + ".topic.name"})
		}
		claim(services, "Cloud Run service", p.Consumer.ServiceName, owner{p.Name, base + ".consumer.serviceName"})
		if store, ok := p.Consumer.SharedStore(); ok {
			shown := store
			if s.StoreSecret && p.Consumer.Store == s.Store {
				shown = Namespace + ":" + KeyStore // a secret URL is never printed
			}
			pp := base + ".consumer.collectionPrefix"
			key := store + "\x00" + p.Consumer.CollectionPrefix
			if prev, dup := collections[key]; dup {
				c.add(p.Name, pp, strconv.Quote(p.Consumer.CollectionPrefix),
					"a collection prefix no other pipeline uses in the same store (pipeline "+prev.pipeline+" uses it in "+shown+")",
					"remove collectionPrefix for the default "+PipelineCollectionPrefix(p.Name)+", or set another: each pipeline owns its dedupe, lease, receipt and poison collections and their Firestore TTL policies")
			} else {
				collections[key] = owner{p.Name, pp}
			}
		}
		for _, sub := range p.SortedSubscriptions() {
			if sub == nil {
				continue
			}
			sp := base + ".subscriptions." + sub.Key + ".name"
			if claim(subs, "subscription", sub.Name, owner{p.Name, sp}) && sub.HasDLQ() {
				claim(topics, "topic", sub.DLQTopicName(), owner{p.Name, sp})
				claim(subs, "subscription", sub.DLQSubscriptionName(), owner{p.Name, sp})
			}
		}
	}
}

// SecretStoreProblems are the problems of storeURL, a store set as a secret at path: what
// validation reports of a secret eventpipe:store, for a secret a program knows only as it
// runs (a component's storeSecret).
func SecretStoreProblems(path, storeURL string) Errors {
	c := &collector{}
	checkStore(c, "", path, storeURL, true)
	return c.errors()
}

func checkStore(c *collector, pipeline, path, storeURL string, secret bool) {
	if storeURL == OfflineSecret {
		return // a secure value the offline reader cannot decrypt (nested ones are reported by decodeJSON)
	}
	shown := strconv.Quote(storeURL)
	if secret {
		shown = OfflineSecret
	}
	scheme := ""
	for _, known := range []string{"firestore://", "postgres://", "postgresql://", "bbolt:///", "mem://"} {
		if strings.HasPrefix(storeURL, known) {
			scheme = known
		}
	}
	firestore := scheme == "firestore://"
	switch {
	case scheme == "" || firestore && len(strings.Split(strings.TrimPrefix(storeURL, scheme), "/")) != 2:
		c.add(pipeline, path, shown, "firestore://PROJECT/DATABASE, postgres://…, bbolt:///PATH or mem://",
			"use firestore://PROJECT/(default) on Cloud Run; bbolt and mem stores lose data when an instance stops")
	case firestore && secret:
		c.add(pipeline, path, shown, "a Firestore store set as a plain value",
			"set it as a plain value (without --secret; consumer.store in a program): a Firestore URL holds no credential, and the components read it to declare the database's TTL policies and the consumer's roles/datastore.user grant")
	case !secret && hasPassword(storeURL):
		c.add(pipeline, path, strconv.Quote(redactPassword(storeURL)), "a URL without a password, or a secret",
			"keep the password out of plain config: set the URL as a secret (`pulumi config set --secret eventpipe:store 'postgres://…'`, or consumer.storeSecret in a Pulumi program); the consumer then reads it from Secret Manager")
	}
}

// hasPassword reports whether a store URL carries a password.
func hasPassword(storeURL string) bool {
	u, err := url.Parse(storeURL)
	if err != nil {
		return strings.Contains(storeURL, "@") // unparsable: assume the worst
	}
	_, set := u.User.Password()
	return set || u.Query().Has("password")
}

// redactPassword hides the password of a store URL for error messages.
func redactPassword(storeURL string) string {
	u, err := url.Parse(storeURL)
	if err != nil {
		return "(a URL with a password)"
	}
	if q := u.Query(); q.Has("password") {
		q.Set("password", "xxxxx")
		u.RawQuery = q.Encode()
	}
	return u.Redacted()
}

// CheckImage reports a consumer image that is not pinned by tag or digest
// (Value, Allowed and Fix set), or nil. Validation calls it; so does the
// Consumer component at deploy time for an image that is another
// resource's output.
func CheckImage(image string) *FieldError {
	if image == "" {
		return &FieldError{Allowed: "a container image by digest (REPO@sha256:…) or tag (REPO:TAG)", Fix: "set consumer.image to the consumer image built from cmd/consumer"}
	}
	if fix := imageProblem(image); fix != "" {
		return &FieldError{Value: strconv.Quote(image), Allowed: "REPO@sha256:<64 hex digits> or REPO:TAG", Fix: fix}
	}
	return nil
}

// checkChannels reports notification channel names that are not full
// resource names.
func checkChannels(c *collector, path string, names []string) {
	checkEach(c, "", path, names, gcpname.Channel, "",
		"projects/PROJECT/notificationChannels/ID", "copy the channel's full resource name from `gcloud beta monitoring channels list --format='value(name)'`")
}

// checkPubSubName reports an invalid topic or subscription id and returns whether it is valid.
func checkPubSubName(c *collector, pipeline, path, name string) bool {
	if !gcpname.PubSubID(name) {
		c.add(pipeline, path, strconv.Quote(name), "3–255 letters, digits or . _ ~ % + -, starting with a letter, not starting with goog",
			"choose a name that fits the Pub/Sub naming rules")
		return false
	}
	return true
}

// end is one of a pair of settings where the first may not exceed the second
// (minBackoff and maxBackoff, minInstances and maxInstances), defaults filled
// in: its key, its value as written in a message, its size, whether it is in
// its range (a value out of it is reported as that alone), and whether the
// stack writes it at this level rather than inheriting or defaulting it.
type end struct {
	key, value string
	n          int64
	valid, set bool
}

// written says whether the setting is written at this level: a duration is
// before durDefault fills it in ("" unset), a count before intDefault does (nil).
func written[T string | *int](v T) bool {
	var zero T
	return v != zero
}

// spanEnd is the end of the duration setting of bound b, filled in as setting.
func spanEnd(b Bound, setting string, set bool) end {
	d, err := ParseDuration(setting)
	return end{key: b.Key(), value: strconv.Quote(setting), n: int64(d), valid: err == nil && int64(d) >= b.Min && int64(d) <= b.Max, set: set}
}

// countEnd is the end of the count of bound b, filled in as v.
func countEnd(b Bound, v int, set bool) end {
	return end{key: b.Key(), value: strconv.Itoa(v), n: int64(v), valid: int64(v) >= b.Min && int64(v) <= b.Max, set: set}
}

// checkOrder reports lo above hi, both below path, where the stack writes
// them: at hi when only hi is written here (a maxBackoff below the default
// minBackoff is the maxBackoff's problem), otherwise at lo. A pair both
// inherited or defaulted is judged where it is written (eventpipe:defaults),
// not again on every pipeline.
func checkOrder(c *collector, pipeline, path string, lo, hi end) {
	if !lo.valid || !hi.valid || lo.n <= hi.n || !lo.set && !hi.set {
		return
	}
	if hi.set && !lo.set {
		c.add(pipeline, path+"."+hi.key, hi.value, fmt.Sprintf("at least %s (%s)", lo.key, strings.Trim(lo.value, `"`)), fmt.Sprintf("raise %s or lower %s", hi.key, lo.key))
		return
	}
	c.add(pipeline, path+"."+lo.key, lo.value, fmt.Sprintf("at most %s (%s)", hi.key, strings.Trim(hi.value, `"`)), fmt.Sprintf("lower %s or raise %s", lo.key, hi.key))
}

// inherit is b with the default its setting inherits in this stack.
func inherit(b Bound, def int64) Bound {
	b.Default = def
	return b
}

// intDefault returns v, or b's default when v is unset, reporting values
// outside b's range; the setting is b's key below parent.
func intDefault(c *collector, pipeline, parent string, v *int, b Bound) *int {
	if v == nil {
		def := int(b.Default)
		return &def
	}
	if e := CountError(b, float64(*v)); e != nil {
		c.add(pipeline, parent+"."+b.Key(), strconv.Itoa(*v), e.Allowed, e.Fix)
	}
	return v
}

// durDefault fills in b's default when the duration setting *v is unset
// (""), and reports a value that does not parse, lies outside b's range or
// is not whole seconds (Pub/Sub and Cloud Run take these in seconds, and a
// fraction would be cut off silently); the setting is b's key below parent.
func durDefault(c *collector, pipeline, parent string, v *string, b Bound) {
	if *v == "" {
		*v = b.Format(b.Default)
		return
	}
	path, allowed := parent+"."+b.Key(), b.Allowed()
	switch d, err := ParseDuration(*v); {
	case err != nil:
		c.add(pipeline, path, strconv.Quote(*v), "a duration from "+allowed+" (units s, m, h, d)", durationFix(b, *v, err))
	case int64(d) < b.Min || int64(d) > b.Max:
		c.add(pipeline, path, strconv.Quote(*v), allowed, fmt.Sprintf("set a duration from %s to %s, or remove the key for the default %s", b.Format(b.Min), b.Format(b.Max), b.Format(b.Default)))
	case d%time.Second != 0:
		c.add(pipeline, path, strconv.Quote(*v), allowed+" in whole seconds", wholeSecondsFix(b, d))
	}
}

// durationFix is the fix of text, a value of b's duration setting that does not parse
// (err): the value it plainly means when b accepts it ("10 minutes": write "10m"), else
// values b accepts, its bounds and its default, in the one grammar.
func durationFix(b Bound, text string, err error) string {
	if d, ok := durations.Guess(text); ok && int64(d) >= b.Min && int64(d) <= b.Max {
		return fmt.Sprintf("write %q: %s takes a number and a unit, s, m, h or d, with no space", b.Format(int64(d)), b.Key())
	}
	var examples []string
	for _, v := range []int64{b.Min, b.Default, b.Max} {
		if q := strconv.Quote(b.Format(v)); !slices.Contains(examples, q) {
			examples = append(examples, q)
		}
	}
	why := "it is not a duration"
	switch {
	case errors.Is(err, durations.ErrDays):
		why = "days must be a whole number"
	case errors.Is(err, durations.ErrNegative):
		why = "it is negative"
	case errors.Is(err, durations.ErrEmpty):
		why = "it is empty"
	}
	return fmt.Sprintf("%s: write a number and a unit (s, m, h or d) from %s to %s, such as %s", why, b.Format(b.Min), b.Format(b.Max), strings.Join(examples, ", "))
}

// wholeSecondsFix is the fix of a duration d of b with a fraction of a
// second: the whole seconds either side of it that b accepts.
func wholeSecondsFix(b Bound, d time.Duration) string {
	var near []string
	for _, w := range []time.Duration{d.Truncate(time.Second), d.Truncate(time.Second) + time.Second} {
		if int64(w) >= b.Min && int64(w) <= b.Max {
			near = append(near, strconv.Quote(b.Format(int64(w))))
		}
	}
	return "write " + strings.Join(near, " or ") + ": " + b.Key() + " is set in whole seconds"
}

// durInherit is durDefault for a setting that inherits from, the value of
// the setting it inherits (already validated where it is written): unset, it
// takes from as it stands, so a problem of from is reported once, there.
func durInherit(c *collector, pipeline, parent string, v *string, b Bound, from string) {
	if *v == "" {
		*v = from
		return
	}
	if d, err := ParseDuration(from); err == nil {
		b.Default = int64(d)
	}
	durDefault(c, pipeline, parent, v, b)
}

// durInRange reports whether setting is a duration from lo to hi.
func durInRange(setting string, lo, hi time.Duration) bool {
	d, err := ParseDuration(setting)
	return err == nil && d >= lo && d <= hi
}

func quoteOrEmpty(s string) string {
	if s == "" {
		return ""
	}
	return strconv.Quote(s)
}
