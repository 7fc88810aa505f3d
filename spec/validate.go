package spec

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Patterns of the names Google Cloud accepts.
var (
	projectIDPattern     = regexp.MustCompile(`^[a-z][a-z0-9-]{4,28}[a-z0-9]$`)
	projectNumberPattern = regexp.MustCompile(`^[1-9][0-9]{0,19}$`)
	regionPattern        = regexp.MustCompile(`^[a-z]+-[a-z]+[0-9]+$`)
	pipelineNamePattern  = regexp.MustCompile(`^[a-z][a-z0-9-]{0,23}[a-z0-9]$`)
	subKeyPattern        = regexp.MustCompile(`^[a-z][a-z0-9-]{0,29}$`)
	pubsubNamePattern    = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9._~%+-]{2,254}$`)
	schemaPattern        = regexp.MustCompile(`^projects/[^/]+/schemas/[^/]+$`)
	kmsPattern           = regexp.MustCompile(`^projects/[^/]+/locations/[^/]+/keyRings/[^/]+/cryptoKeys/[^/]+$`)
	channelPattern       = regexp.MustCompile(`^projects/[^/]+/notificationChannels/[^/]+$`)
	servicePattern       = regexp.MustCompile(`^[a-z]([-a-z0-9]{0,47}[a-z0-9])?$`)
	digestImagePattern   = regexp.MustCompile(`^[a-z0-9][a-z0-9./_-]*(:[0-9]+)?(/[a-z0-9._-]+)*@sha256:[0-9a-f]{64}$`)
	tagImagePattern      = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]*(:[0-9]+)?(/[a-z0-9._-]+)*:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`)
	cpuPattern           = regexp.MustCompile(`^([1-9][0-9]*m|[1-9][0-9]*(\.[0-9]+)?)$`)
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
	switch {
	case s.Project == "":
		c.add("", root+KeyProject, "", "a GCP project id", "set eventpipe:project to the project id the stack deploys into")
	case !projectIDPattern.MatchString(s.Project):
		c.add("", root+KeyProject, strconv.Quote(s.Project), "6–30 lowercase letters, digits or hyphens, starting with a letter",
			"use the project id (not the display name) shown by `gcloud projects list`")
	}
	if !projectNumberPattern.MatchString(s.ProjectNumber) {
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
			"set eventpipe:env to a short lowercase name such as dev, staging or prod")
	}
	if s.Store != "" {
		checkStore(c, "", root+KeyStore, s.Store, s.StoreSecret)
	}
	for i, ch := range s.NotificationChannels {
		if !channelPattern.MatchString(ch) {
			c.add("", fmt.Sprintf("%s%s[%d]", root, KeyNotificationChannels, i), strconv.Quote(ch),
				"projects/PROJECT/notificationChannels/ID", "copy the channel's full resource name from `gcloud beta monitoring channels list`")
		}
	}
	validateDefaults(c, root+KeyDefaults, &s.Defaults)
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

func validateDefaults(c *collector, path string, d *Defaults) {
	d.MaxDeliveryAttempts = intDefault(c, "", path+".maxDeliveryAttempts", d.MaxDeliveryAttempts, DefaultMaxDeliveryAttempts, MinMaxDeliveryAttempts, MaxMaxDeliveryAttempts,
		"Pub/Sub accepts 5–100 delivery attempts")
	d.MinBackoff = durDefault(c, "", path+".minBackoff", d.MinBackoff, DefaultMinBackoff, 0, MaxBackoffLimit)
	d.MaxBackoff = durDefault(c, "", path+".maxBackoff", d.MaxBackoff, DefaultMaxBackoff, 0, MaxBackoffLimit)
	checkBackoffOrder(c, "", path, d.MinBackoff, d.MaxBackoff)
	d.DLQRetention = durDefault(c, "", path+".dlqRetention", d.DLQRetention, DefaultDLQRetention, MinDLQRetention, MaxDLQRetention)
	d.MinInstances = intDefault(c, "", path+".minInstances", d.MinInstances, DefaultMinInstances, 0, MaxMinInstances, "keep 0 for scale-to-zero or at most 100 warm instances")
	d.MaxInstances = intDefault(c, "", path+".maxInstances", d.MaxInstances, DefaultMaxInstances, 1, MaxMaxInstances, "Cloud Run needs at least one instance")
}

func validatePipeline(c *collector, s *Stack, p *Pipeline, path string) {
	if !pipelineNamePattern.MatchString(p.Name) {
		c.add(p.Name, path, strconv.Quote(p.Name), "2–25 lowercase letters, digits or hyphens, starting with a letter",
			"rename the pipeline key; it prefixes service account ids, which GCP limits to 30 characters")
	}
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
	for _, sub := range p.Subscriptions {
		if sub != nil && sub.Delivery == DeliveryPull && *p.Consumer.MinInstances < 1 {
			c.add(p.Name, path+".consumer.minInstances", strconv.Itoa(*p.Consumer.MinInstances), "at least 1 when the pipeline has a pull subscription",
				"set consumer.minInstances: 1 (or more); a pull consumer scaled to zero never pulls, so messages wait until they are dead-lettered")
			break
		}
	}
}

func validateTopic(c *collector, p *Pipeline, path string) {
	t := &p.Topic
	if t.Name == "" {
		t.Name = p.Name
	}
	checkPubSubName(c, p.Name, path+".name", t.Name)
	t.MessageRetention = durDefault(c, p.Name, path+".messageRetention", t.MessageRetention, DefaultRetention, MinRetention, MaxRetention)
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
	if t.KMSKeyName != "" && !kmsPattern.MatchString(t.KMSKeyName) {
		c.add(p.Name, path+".kmsKeyName", strconv.Quote(t.KMSKeyName), "projects/P/locations/L/keyRings/R/cryptoKeys/K", "use the key's full resource name (not a key version)")
	}
}

func validateConsumer(c *collector, s *Stack, p *Pipeline, path string) {
	k := &p.Consumer
	switch {
	case k.Image == "":
		c.add(p.Name, path+".image", "", "a container image by digest (REPO@sha256:…) or tag (REPO:TAG)", "set consumer.image to the consumer image built from cmd/consumer")
	case !digestImagePattern.MatchString(k.Image) && !tagImagePattern.MatchString(k.Image):
		c.add(p.Name, path+".image", strconv.Quote(k.Image), "REPO@sha256:<64 hex digits> or REPO:TAG", "add a tag or digest; an untagged image silently means :latest")
	}
	derived := k.ServiceName == ""
	if derived {
		k.ServiceName = p.Name + "-consumer"
	}
	// A derived name is only wrong if the pipeline name is, which is reported already.
	if !servicePattern.MatchString(k.ServiceName) && (!derived || pipelineNamePattern.MatchString(p.Name)) {
		c.add(p.Name, path+".serviceName", strconv.Quote(k.ServiceName), "1–49 lowercase letters, digits or hyphens, starting with a letter", "choose a shorter lowercase service name")
	}
	k.RequestTimeout = durDefault(c, p.Name, path+".requestTimeout", k.RequestTimeout, DefaultRequestTimeout, MinAckDeadline, MaxAckDeadline)
	k.Concurrency = intDefault(c, p.Name, path+".concurrency", k.Concurrency, DefaultConcurrency, 1, MaxConcurrency, "Cloud Run allows 1–1000 concurrent requests per instance")
	k.MinInstances = intDefault(c, p.Name, path+".minInstances", k.MinInstances, *s.Defaults.MinInstances, 0, MaxMinInstances, "keep 0 for scale-to-zero or at most 100 warm instances")
	k.MaxInstances = intDefault(c, p.Name, path+".maxInstances", k.MaxInstances, *s.Defaults.MaxInstances, 1, MaxMaxInstances, "Cloud Run needs at least one instance")
	if intInRange(*k.MinInstances, 0, MaxMinInstances) && intInRange(*k.MaxInstances, 1, MaxMaxInstances) && *k.MinInstances > *k.MaxInstances {
		c.add(p.Name, path+".minInstances", strconv.Itoa(*k.MinInstances), fmt.Sprintf("at most maxInstances (%d)", *k.MaxInstances), "lower minInstances or raise maxInstances")
	}
	switch k.Ingress {
	case "":
		k.Ingress = IngressInternal
	case IngressInternal, IngressInternalLB:
	case "all", "INGRESS_TRAFFIC_ALL":
		c.add(p.Name, path+".ingress", strconv.Quote(k.Ingress), IngressInternal+" or "+IngressInternalLB,
			"use internal: Pub/Sub push from the same project is internal traffic, and the consumer must not be reachable from the internet")
	default:
		c.add(p.Name, path+".ingress", strconv.Quote(k.Ingress), IngressInternal+" or "+IngressInternalLB, "pick one of the allowed values")
	}
	if k.CPU == "" {
		k.CPU = DefaultCPU
	} else if !cpuPattern.MatchString(k.CPU) {
		c.add(p.Name, path+".cpu", strconv.Quote(k.CPU), `a CPU quantity such as "1", "2" or "1000m"`, "write the CPU limit as a quoted number")
	}
	if k.Memory == "" {
		k.Memory = DefaultMemory
	} else if !memoryPattern.MatchString(k.Memory) {
		c.add(p.Name, path+".memory", strconv.Quote(k.Memory), `a memory quantity such as "512Mi" or "1Gi"`, "use Mi or Gi units")
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
	switch timeout := p.Consumer.RequestTimeout; {
	case sub.Push() && sub.AckDeadline == nil:
		// Follows the consumer's request timeout, which is checked there.
		sub.AckDeadline = timeout
	case sub.Push() && durInRange(sub.AckDeadline, MinAckDeadline, MaxAckDeadline) && durInRange(timeout, MinAckDeadline, MaxAckDeadline) && sub.AckDeadline.D != timeout.D:
		c.add(p.Name, path+".ackDeadline", strconv.Quote(sub.AckDeadline.Raw), fmt.Sprintf("the consumer's requestTimeout (%s)", timeout.Raw),
			"remove ackDeadline (push subscriptions follow consumer.requestTimeout) or set both to the same value; otherwise Pub/Sub redelivers while the first request still runs")
	default:
		sub.AckDeadline = durDefault(c, p.Name, path+".ackDeadline", sub.AckDeadline, DefaultPullAckDeadline, MinAckDeadline, MaxAckDeadline)
	}
	sub.MinBackoff = durDefault(c, p.Name, path+".minBackoff", sub.MinBackoff, s.Defaults.MinBackoff.D, 0, MaxBackoffLimit)
	sub.MaxBackoff = durDefault(c, p.Name, path+".maxBackoff", sub.MaxBackoff, s.Defaults.MaxBackoff.D, 0, MaxBackoffLimit)
	checkBackoffOrder(c, p.Name, path, sub.MinBackoff, sub.MaxBackoff)
	sub.Retention = durDefault(c, p.Name, path+".retention", sub.Retention, DefaultRetention, MinRetention, MaxRetention)
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
	dl := &sub.DeadLetter
	if dl.OptOut {
		if NormaliseLabelValue(dl.Reason) == "" {
			c.add(p.Name, path+".deadLetter.reason", quoteOrEmpty(dl.Reason), "a short reason (it becomes the eventpipe_dlq_opt_out_reason label)",
				"explain why this subscription may lose poison messages, or remove optOut to keep the dead-letter queue")
		}
		if sub.MaxDeliveryAttempts != nil {
			c.add(p.Name, path+".maxDeliveryAttempts", strconv.Itoa(*sub.MaxDeliveryAttempts), "only with a dead-letter queue", "remove maxDeliveryAttempts or remove deadLetter.optOut")
		}
		if dl.Retention != nil {
			c.add(p.Name, path+".deadLetter.retention", strconv.Quote(dl.Retention.Raw), "only with a dead-letter queue", "remove deadLetter.retention or remove deadLetter.optOut")
		}
		return
	}
	if dl.Reason != "" {
		c.add(p.Name, path+".deadLetter.reason", strconv.Quote(dl.Reason), "only with deadLetter.optOut: true", "remove the reason, or set optOut: true if the DLQ really must go")
	}
	sub.MaxDeliveryAttempts = intDefault(c, p.Name, path+".maxDeliveryAttempts", sub.MaxDeliveryAttempts, *s.Defaults.MaxDeliveryAttempts,
		MinMaxDeliveryAttempts, MaxMaxDeliveryAttempts, "Pub/Sub accepts 5–100 delivery attempts")
	dl.Retention = durDefault(c, p.Name, path+".deadLetter.retention", dl.Retention, s.Defaults.DLQRetention.D, MinDLQRetention, MaxDLQRetention)
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
		claim(topics, "topic", p.Topic.Name, owner{p.Name, base + ".topic.name"})
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

func checkStore(c *collector, pipeline, path, url string, secret bool) {
	if url == OfflineSecret {
		return // a secure value the offline reader cannot decrypt (nested ones are reported by decodeJSON)
	}
	for _, scheme := range []string{"firestore://", "postgres://", "postgresql://", "bbolt:///", "mem://"} {
		if strings.HasPrefix(url, scheme) {
			if scheme == "firestore://" && len(strings.Split(strings.TrimPrefix(url, scheme), "/")) != 2 {
				break
			}
			return
		}
	}
	shown := strconv.Quote(url)
	if secret {
		shown = OfflineSecret
	}
	c.add(pipeline, path, shown, "firestore://PROJECT/DATABASE, postgres://…, bbolt:///PATH or mem://",
		"use firestore://PROJECT/(default) on Cloud Run; bbolt and mem stores lose data when an instance stops")
}

// checkPubSubName reports an invalid topic or subscription id and returns whether it is valid.
func checkPubSubName(c *collector, pipeline, path, name string) bool {
	if !pubsubNamePattern.MatchString(name) || strings.HasPrefix(strings.ToLower(name), "goog") {
		c.add(pipeline, path, strconv.Quote(name), "3–255 letters, digits or . _ ~ % + -, starting with a letter, not starting with goog",
			"choose a name that fits the Pub/Sub naming rules")
		return false
	}
	return true
}

func checkBackoffOrder(c *collector, pipeline, path string, lo, hi *Duration) {
	if durInRange(lo, 0, MaxBackoffLimit) && durInRange(hi, 0, MaxBackoffLimit) && lo.D > hi.D {
		c.add(pipeline, path+".minBackoff", strconv.Quote(lo.Raw), fmt.Sprintf("at most maxBackoff (%s)", hi.Raw), "lower minBackoff or raise maxBackoff")
	}
}

// intDefault returns v, or def when v is unset, reporting values outside [lo, hi].
func intDefault(c *collector, pipeline, path string, v *int, def, lo, hi int, why string) *int {
	if v == nil {
		return &def
	}
	if *v < lo || *v > hi {
		c.add(pipeline, path, strconv.Itoa(*v), fmt.Sprintf("%d–%d", lo, hi), fmt.Sprintf("set a value from %d to %d (%s), or remove the key for the default %d", lo, hi, why, def))
	}
	return v
}

// durDefault returns v, or def when v is unset, reporting unparsable values
// and values outside [lo, hi].
func durDefault(c *collector, pipeline, path string, v *Duration, def, lo, hi time.Duration) *Duration {
	if v == nil {
		return Dur(def)
	}
	allowed := FormatDuration(lo) + "–" + FormatDuration(hi)
	if v.Err != nil {
		c.add(pipeline, path, strconv.Quote(v.Raw), "a duration from "+allowed+", written like 10s, 10m or 14d", v.Err.Error()+"; add a unit (s, m, h or d)")
		return v
	}
	if v.D < lo || v.D > hi {
		c.add(pipeline, path, strconv.Quote(v.Raw), allowed, fmt.Sprintf("set a duration from %s to %s, or remove the key for the default %s", FormatDuration(lo), FormatDuration(hi), FormatDuration(def)))
	}
	return v
}

func intInRange(v, lo, hi int) bool { return v >= lo && v <= hi }

func durInRange(d *Duration, lo, hi time.Duration) bool {
	return d != nil && d.Err == nil && d.D >= lo && d.D <= hi
}

func quoteOrEmpty(s string) string {
	if s == "" {
		return ""
	}
	return strconv.Quote(s)
}
