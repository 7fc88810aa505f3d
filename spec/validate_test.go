package spec_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/eventpipe/eventpipe/spec"
)

func TestLoadFillsEveryDefault(t *testing.T) {
	st, errs := load(t, baseConfig())
	if errs != nil {
		t.Fatalf("base config invalid: %v", errs)
	}
	if st.Region != spec.DefaultRegion || st.Env != "dev" || st.Name != "dev" {
		t.Errorf("region/env/name = %q/%q/%q", st.Region, st.Env, st.Name)
	}
	p := st.Pipelines["orders"]
	if p.Name != "orders" || p.Topic.Name != "orders" || spec.Length(p.Topic.MessageRetention) != spec.DefaultRetention {
		t.Errorf("topic defaults: %+v", p.Topic)
	}
	k := p.Consumer
	checks := []struct {
		name      string
		got, want any
	}{
		{"serviceName", k.ServiceName, "orders-consumer"},
		{"requestTimeout", spec.Length(k.RequestTimeout), spec.DefaultRequestTimeout},
		{"concurrency", *k.Concurrency, spec.DefaultConcurrency},
		{"maxInstances", *k.MaxInstances, spec.DefaultMaxInstances},
		{"ingress", k.Ingress, spec.IngressInternal},
		{"cpu", k.CPU, spec.DefaultCPU},
		{"memory", k.Memory, spec.DefaultMemory},
		{"store", k.Store, "firestore://acme-dev/(default)"},
		{"collectionPrefix", k.CollectionPrefix, "eventpipe_orders_"},
		{"audience", k.Audience, "acme-dev/orders/pubsub-push"},
		{"version", k.Version(), "1.2.3"},
	}
	main, work := p.Subscriptions["main"], p.Subscriptions["work"]
	checks = append(checks, []struct {
		name      string
		got, want any
	}{
		{"push name", main.Name, "orders-main"},
		{"push ackDeadline follows requestTimeout", spec.Length(main.AckDeadline), spec.DefaultRequestTimeout},
		{"pull ackDeadline", spec.Length(work.AckDeadline), spec.DefaultPullAckDeadline},
		{"maxDeliveryAttempts", *main.MaxDeliveryAttempts, spec.DefaultMaxDeliveryAttempts},
		{"minBackoff", spec.Length(main.MinBackoff), spec.DefaultMinBackoff},
		{"maxBackoff", spec.Length(main.MaxBackoff), spec.DefaultMaxBackoff},
		{"retention", spec.Length(main.Retention), spec.DefaultRetention},
		{"dlq retention", spec.Length(main.DeadLetter.Retention), spec.DefaultDLQRetention},
		{"dlq topic", main.DLQTopicName(), "orders-main.dlq"},
		{"dlq subscription", main.DLQSubscriptionName(), "orders-main.dlq-sub"},
		{"has dlq", main.HasDLQ(), true},
	}...)
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	if got := st.PushAccounts(p); len(got) != 1 || got[0] != "orders-main-push@acme-dev.iam.gserviceaccount.com" {
		t.Errorf("push accounts = %v", got)
	}
	if got := st.PullSubscriptions(p); len(got) != 1 || got[0] != "projects/acme-dev/subscriptions/orders-work" {
		t.Errorf("pull subscriptions = %v", got)
	}
}

func TestStackDefaultsApplyToPipelines(t *testing.T) {
	cfg := baseConfig()
	set(cfg, "eventpipe:defaults", "", map[string]any{
		"maxDeliveryAttempts": 12, "minBackoff": "20s", "maxBackoff": "5m", "dlqRetention": "7d", "minInstances": 2, "maxInstances": 30,
	})
	st, errs := load(t, cfg)
	if errs != nil {
		t.Fatal(errs)
	}
	p := st.Pipelines["orders"]
	sub := p.Subscriptions["main"]
	if *sub.MaxDeliveryAttempts != 12 || spec.Length(sub.MinBackoff) != 20*time.Second || spec.Length(sub.MaxBackoff) != 5*time.Minute || spec.Length(sub.DeadLetter.Retention) != 7*spec.Day {
		t.Errorf("subscription did not inherit stack defaults: %+v", sub)
	}
	if *p.Consumer.MaxInstances != 30 {
		t.Errorf("maxInstances = %d, want 30", *p.Consumer.MaxInstances)
	}
	if *p.Consumer.MinInstances != 1 {
		t.Errorf("explicit minInstances overridden: %d", *p.Consumer.MinInstances)
	}
}

// TestValidationErrors covers every validation rule: each case breaks one
// value and expects exactly one error at the right path, naming what is allowed.
func TestValidationErrors(t *testing.T) {
	const (
		pl   = "eventpipe:pipelines"
		main = "orders.subscriptions.main."
		work = "orders.subscriptions.work."
		cons = "orders.consumer."
	)
	cases := []struct {
		name, key, path string
		value           any
		wantPath        string
		wantAllowed     string
	}{
		{"missing project", "eventpipe:project", "", remove, "eventpipe:project", "GCP project id"},
		{"bad project", "eventpipe:project", "", "My Project", "eventpipe:project", "6–30 lowercase"},
		{"bad project number", "eventpipe:projectNumber", "", "12x", "eventpipe:projectNumber", "numeric project number"},
		{"bad region", "eventpipe:region", "", "Europe", "eventpipe:region", "Cloud Run region"},
		{"bad env", "eventpipe:env", "", "Prod!", "eventpipe:env", "label value"},
		{"bad store", "eventpipe:store", "", "redis://x", "eventpipe:store", "firestore://PROJECT/DATABASE"},
		{"bad channel", "eventpipe:notificationChannels", "", []any{"pagerduty"}, "eventpipe:notificationChannels[0]", "notificationChannels/ID"},
		{"unknown top key", "eventpipe:pipeline", "", "x", "eventpipe:pipeline", "the keys eventpipe:project"},
		{"no pipelines", pl, "", map[string]any{}, pl, "at least one pipeline"},
		{"defaults attempts", "eventpipe:defaults", "maxDeliveryAttempts", 200, "eventpipe:defaults.maxDeliveryAttempts", "5–100"},
		{"defaults unknown", "eventpipe:defaults", "retries", 3, "eventpipe:defaults.retries", "the keys"},
		{"defaults duration not a string", "eventpipe:defaults", "minBackoff", 10, "eventpipe:defaults.minBackoff", `a duration string such as "10s"`},
		{"defaults duration without a unit", "eventpipe:defaults", "dlqRetention", "14", "eventpipe:defaults.dlqRetention", "a duration from 7d–14d"},
		{"bad pipeline name", pl, "Orders_2", map[string]any{"consumer": map[string]any{"image": "r/x:1"}, "subscriptions": map[string]any{"a": map[string]any{"delivery": "push"}}}, pl + ".Orders_2", "2–25 lowercase"},
		{"reserved label", pl, "orders.labels.eventpipe_env", "x", pl + ".orders.labels.eventpipe_env", "not starting with eventpipe_"},
		{"bad label value", pl, "orders.labels.team", "Platform Team", pl + ".orders.labels.team", "label values"},
		{"too many labels", pl, "orders.labels", manyLabels(60), pl + ".orders.labels", "at most 59 labels"},
		{"unknown pipeline key", pl, "orders.dlq", true, pl + ".orders.dlq", "the keys alerts, consumer"},
		{"topic retention", pl, "orders.topic.messageRetention", "32d", pl + ".orders.topic.messageRetention", "10m–31d"},
		{"topic retention unit", pl, "orders.topic.messageRetention", "7", pl + ".orders.topic.messageRetention", "a duration from 10m–31d"},
		{"schema", pl, "orders.topic.schema", "orders-schema", pl + ".orders.topic.schema", "projects/PROJECT/schemas/SCHEMA"},
		{"encoding without schema", pl, "orders.topic.schemaEncoding", "JSON", pl + ".orders.topic.schemaEncoding", "only together with topic.schema"},
		{"kms", pl, "orders.topic.kmsKeyName", "my-key", pl + ".orders.topic.kmsKeyName", "cryptoKeys/K"},
		{"missing image", pl, cons + "image", remove, pl + ".orders.consumer.image", "by digest"},
		{"untagged image", pl, cons + "image", "gcr.io/acme/consumer", pl + ".orders.consumer.image", "REPO:TAG"},
		{"service name", pl, cons + "serviceName", "Orders", pl + ".orders.consumer.serviceName", "1–49 lowercase"},
		{"request timeout", pl, cons + "requestTimeout", "20m", pl + ".orders.consumer.requestTimeout", "10s–10m"},
		{"concurrency", pl, cons + "concurrency", 0, pl + ".orders.consumer.concurrency", "1–1000"},
		{"min instances", pl, cons + "minInstances", 101, pl + ".orders.consumer.minInstances", "0–100"},
		{"max instances", pl, cons + "maxInstances", 0, pl + ".orders.consumer.maxInstances", "1–1000"},
		{"min over max", pl, cons + "maxInstances", 1, "", ""},
		{"ingress all", pl, cons + "ingress", "all", pl + ".orders.consumer.ingress", "internal or internal-and-cloud-load-balancing"},
		{"cpu", pl, cons + "cpu", "lots", pl + ".orders.consumer.cpu", "a CPU count"},
		{"memory", pl, cons + "memory", "1GB", pl + ".orders.consumer.memory", "a memory size in Mi or Gi"},
		{"execution environment", pl, cons + "executionEnvironment", "gen3", pl + ".orders.consumer.executionEnvironment", "gen1 or gen2"},
		{"max message bytes zero", pl, cons + "maxMessageBytes", 0, pl + ".orders.consumer.maxMessageBytes", "1–10000000"},
		{"max message bytes over pubsub", pl, cons + "maxMessageBytes", 10_000_001, pl + ".orders.consumer.maxMessageBytes", "1–10000000"},
		{"callback account member string", pl, cons + "callbackAccounts", []any{"jobs@acme-dev.iam.gserviceaccount.com", "serviceAccount:sync@acme-dev.iam.gserviceaccount.com"}, pl + ".orders.consumer.callbackAccounts[1]", "a service account email"},
		{"callback account not an email", pl, cons + "callbackAccounts", []any{"billing-jobs"}, pl + ".orders.consumer.callbackAccounts[0]", "a service account email"},
		{"callback audience without accounts", pl, cons + "callbackAudience", "https://orders.example/callback", pl + ".orders.consumer.callbackAudience", "only with callbackAccounts"},
		{"consumer account", pl, cons + "serviceAccount", "serviceAccount:run@acme-dev.iam.gserviceaccount.com", pl + ".orders.consumer.serviceAccount", "a service account email"},
		{"store password in plain config", pl, cons + "store", "postgres://app:hunter2@db.internal/eventpipe", pl + ".orders.consumer.store", "without a password, or a secret"},
		{"store password in query", pl, cons + "store", "postgres://db.internal/eventpipe?user=app&password=hunter2", pl + ".orders.consumer.store", "without a password, or a secret"},
		{"existing topic not a full name", pl, "orders.topic.existing", "orders", pl + ".orders.topic.existing", "projects/PROJECT/topics/TOPIC"},
		{"existing topic with owner settings", pl, "orders.topic", map[string]any{"existing": "projects/producer-prod/topics/orders", "messageRetention": "7d"}, pl + ".orders.topic.messageRetention", "only on a topic the pipeline declares"},
		{"publisher not a member", pl, "orders.topic.publishers", []any{"producer@acme-dev.iam.gserviceaccount.com"}, pl + ".orders.topic.publishers[0]", "an IAM member"},
		{"publisher twice", pl, "orders.topic.publishers", []any{"group:p@acme.example", "group:p@acme.example"}, pl + ".orders.topic.publishers[1]", "each member once"},
		{"subscribers on push", pl, main + "subscribers", []any{"serviceAccount:r@other-proj.iam.gserviceaccount.com"}, pl + ".orders.subscriptions.main.subscribers", "only on delivery: pull"},
		{"external on push", pl, main + "external", true, pl + ".orders.subscriptions.main.external", "only on delivery: pull"},
		{"external without subscribers", pl, work + "external", true, pl + ".orders.subscriptions.work.subscribers", "at least one member"},
		{"protect not a bool", pl, "orders.protect", "no", pl + ".orders.protect", "true or false"},
		{"routes", pl, cons + "routes", "routes.yaml", pl + ".orders.consumer.routes", "absolute path"},
		{"consumer store", pl, cons + "store", "firestore://only-project", pl + ".orders.consumer.store", "firestore://PROJECT/DATABASE"},
		{"prefix", pl, cons + "collectionPrefix", "Eventpipe-", pl + ".orders.consumer.collectionPrefix", "lowercase letters, digits and _"},
		{"wrong type", pl, cons + "concurrency", "80", pl + ".orders.consumer.concurrency", "a whole number"},
		{"duration not a string", pl, main + "minBackoff", 10, pl + ".orders.subscriptions.main.minBackoff", `a duration string such as "10s"`},
		{"string not a string", pl, cons + "routes", 10, pl + ".orders.consumer.routes", "a string"},
		{"pull scaled to zero", pl, cons + "minInstances", 0, pl + ".orders.consumer.minInstances", "at least 1 when the pipeline has a pull subscription"},
		{"no subscriptions", pl, "orders.subscriptions", map[string]any{}, pl + ".orders.subscriptions", "at least one subscription"},
		{"missing delivery", pl, main + "delivery", remove, pl + ".orders.subscriptions.main.delivery", "push or pull"},
		{"bad delivery", pl, main + "delivery", "PUSH", pl + ".orders.subscriptions.main.delivery", "push or pull"},
		{"bad subscription key", pl, "orders.subscriptions.Main", map[string]any{"delivery": "push"}, pl + ".orders.subscriptions.Main", "1–30 lowercase"},
		{"bad subscription name", pl, main + "name", "goog-x", pl + ".orders.subscriptions.main.name", "not starting with goog"},
		{"ack deadline low", pl, work + "ackDeadline", "5s", pl + ".orders.subscriptions.work.ackDeadline", "10s–10m"},
		{"ack deadline high", pl, work + "ackDeadline", "601s", pl + ".orders.subscriptions.work.ackDeadline", "10s–10m"},
		{"push ack deadline differs", pl, main + "ackDeadline", "30s", pl + ".orders.subscriptions.main.ackDeadline", "the consumer's requestTimeout (1m)"},
		{"attempts low", pl, main + "maxDeliveryAttempts", 4, pl + ".orders.subscriptions.main.maxDeliveryAttempts", "5–100"},
		{"attempts high", pl, main + "maxDeliveryAttempts", 101, pl + ".orders.subscriptions.main.maxDeliveryAttempts", "5–100"},
		{"min backoff", pl, main + "minBackoff", "11m", pl + ".orders.subscriptions.main.minBackoff", "0s–10m"},
		{"max backoff", pl, main + "maxBackoff", "601s", pl + ".orders.subscriptions.main.maxBackoff", "0s–10m"},
		{"backoff order", pl, main + "minBackoff", "5m", "", ""},
		{"retention", pl, main + "retention", "5m", pl + ".orders.subscriptions.main.retention", "10m–31d"},
		{"filter", pl, main + "filter", "attributes.type = \"" + strings.Repeat("x", 250) + "\"", pl + ".orders.subscriptions.main.filter", "at most 256 bytes"},
		{"exactly once on push", pl, main + "exactlyOnce", true, pl + ".orders.subscriptions.main.exactlyOnce", "only on delivery: pull"},
		{"push endpoint on pull", pl, work + "pushEndpoint", "https://x.example", pl + ".orders.subscriptions.work.pushEndpoint", "only on delivery: push"},
		{"http push endpoint", pl, main + "pushEndpoint", "http://x.example/pubsub/push", pl + ".orders.subscriptions.main.pushEndpoint", "an https:// URL"},
		{"dlq retention low", pl, main + "deadLetter.retention", "6d", pl + ".orders.subscriptions.main.deadLetter.retention", "7d–14d"},
		{"dlq retention high", pl, main + "deadLetter.retention", "15d", pl + ".orders.subscriptions.main.deadLetter.retention", "7d–14d"},
		{"opt out without reason", pl, main + "deadLetter.optOut", true, pl + ".orders.subscriptions.main.deadLetter.reason", "a short reason"},
		{"reason without opt out", pl, main + "deadLetter.reason", "because", pl + ".orders.subscriptions.main.deadLetter.reason", "only with deadLetter.optOut: true"},
		{"unknown dead letter key", pl, main + "deadLetter.topic", "x", pl + ".orders.subscriptions.main.deadLetter.topic", "the keys optOut, reason, retention"},
		{"duplicate service name", pl, "billing", map[string]any{"consumer": map[string]any{"image": "r/x:1", "serviceName": "orders-consumer"}, "subscriptions": map[string]any{"a": map[string]any{"delivery": "push"}}}, pl + ".orders.consumer.serviceName", "Cloud Run service ids unique"},
		{"duplicate topic name", pl, "billing", map[string]any{"topic": map[string]any{"name": "orders"}, "consumer": map[string]any{"image": "r/x:1"}, "subscriptions": map[string]any{"a": map[string]any{"delivery": "push"}}}, pl + ".orders.topic.name", "topic ids unique"},
		{"duplicate subscription name", pl, work + "name", "orders-main", pl + ".orders.subscriptions.work.name", "subscription ids unique"},
		{"shared collection prefix", pl, "billing", map[string]any{"consumer": map[string]any{"image": "r/x:1", "collectionPrefix": "eventpipe_orders_"}, "subscriptions": map[string]any{"a": map[string]any{"delivery": "push"}}}, pl + ".orders.consumer.collectionPrefix", "no other pipeline uses in the same store (pipeline billing uses it in firestore://acme-dev/(default))"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := baseConfig()
			set(cfg, tc.key, tc.path, tc.value)
			switch tc.name {
			case "min over max":
				set(cfg, tc.key, cons+"minInstances", 2)
				tc.wantPath, tc.wantAllowed = pl+".orders.consumer.minInstances", "at most maxInstances (1)"
			case "backoff order":
				set(cfg, tc.key, main+"maxBackoff", "1m")
				tc.wantPath, tc.wantAllowed = pl+".orders.subscriptions.main.minBackoff", "at most maxBackoff (1m)"
			}
			_, errs := load(t, cfg)
			if len(errs) != 1 {
				t.Fatalf("got %d errors, want 1: %v", len(errs), errs)
			}
			e := errs[0]
			if e.Path != tc.wantPath || !strings.Contains(e.Allowed, tc.wantAllowed) {
				t.Errorf("error = %q\nwant path %q allowing %q", e.Error(), tc.wantPath, tc.wantAllowed)
			}
			if e.Fix == "" {
				t.Errorf("error has no fix: %q", e.Error())
			}
			if strings.HasPrefix(e.Path, pl+".orders") && e.Pipeline != "orders" {
				t.Errorf("pipeline = %q, want orders", e.Pipeline)
			}
		})
	}
}

func TestAllErrorsReportedAtOnce(t *testing.T) {
	cfg := baseConfig()
	set(cfg, "eventpipe:project", "", remove)
	set(cfg, "eventpipe:pipelines", "orders.subscriptions.main.maxDeliveryAttempts", 3)
	set(cfg, "eventpipe:pipelines", "orders.subscriptions.main.minBackof", "5s")
	set(cfg, "eventpipe:pipelines", "orders.subscriptions.work.exactlyOnce", "yes")
	set(cfg, "eventpipe:pipelines", "orders.consumer.ingress", "all")
	_, errs := load(t, cfg)
	want := []string{
		"eventpipe:pipelines.orders.consumer.ingress",
		"eventpipe:pipelines.orders.subscriptions.main.maxDeliveryAttempts",
		"eventpipe:pipelines.orders.subscriptions.main.minBackof",
		"eventpipe:pipelines.orders.subscriptions.work.exactlyOnce",
		"eventpipe:project",
	}
	var got []string
	for _, e := range errs {
		got = append(got, e.Path)
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("paths =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if msg := errs.Error(); !strings.Contains(msg, "5 problems") || !strings.Contains(msg, `did you mean "minBackoff"?`) {
		t.Errorf("message lacks count or suggestion:\n%s", msg)
	}
}

func TestDeadLetterOptOut(t *testing.T) {
	cfg := baseConfig()
	set(cfg, "eventpipe:pipelines", "orders.subscriptions.main.deadLetter", map[string]any{"optOut": true, "reason": "Replays come from the warehouse; poison is logged!"})
	st, errs := load(t, cfg)
	if errs != nil {
		t.Fatal(errs)
	}
	p := st.Pipelines["orders"]
	sub := p.Subscriptions["main"]
	if sub.HasDLQ() || sub.MaxDeliveryAttempts != nil {
		t.Errorf("opt-out still has a DLQ: %+v", sub)
	}
	labels := st.SubscriptionLabels(p, sub)
	if labels[spec.LabelDLQOptOut] != "true" || labels[spec.LabelDLQOptOutReason] != "replays-come-from-the-warehouse-poison-is-logged" {
		t.Errorf("labels = %v", labels)
	}
	set(cfg, "eventpipe:pipelines", "orders.subscriptions.main.maxDeliveryAttempts", 7)
	if _, errs := load(t, cfg); len(errs) != 1 || errs[0].Path != "eventpipe:pipelines.orders.subscriptions.main.maxDeliveryAttempts" {
		t.Errorf("maxDeliveryAttempts with opt-out: %v", errs)
	}
}

func TestSecretStoreSkipsOfflineValidation(t *testing.T) {
	cfg := baseConfig()
	src := source(t, cfg)
	src.Values["eventpipe:store"] = spec.OfflineSecret
	src.Secrets["eventpipe:store"] = true
	st, err := spec.Load("dev", src)
	if err != nil {
		t.Fatal(err)
	}
	if !st.StoreSecret || st.Pipelines["orders"].Consumer.Store != spec.OfflineSecret {
		t.Errorf("secret store not inherited: %+v", st.Pipelines["orders"].Consumer)
	}
	src.Values["eventpipe:store"] = "redis://user:hunter2@host"
	_, err = spec.Load("dev", src)
	if err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("invalid secret store: err = %v (must fail without echoing the secret)", err)
	}
}

// manyLabels returns n valid labels.
func manyLabels(n int) map[string]any {
	out := map[string]any{}
	for i := range n {
		out[fmt.Sprintf("team%d", i)] = "x"
	}
	return out
}

// TestCollectionPrefixPerStore: every pipeline gets collections of its own,
// and two pipelines may use one prefix only in stores they do not share.
func TestCollectionPrefixPerStore(t *testing.T) {
	const pl = "eventpipe:pipelines"
	pipeline := func(consumer map[string]any) map[string]any {
		consumer["image"] = "r/x:1"
		return map[string]any{"consumer": consumer, "subscriptions": map[string]any{"a": map[string]any{"delivery": "push"}}}
	}
	cases := []struct {
		name      string
		store     string // eventpipe:store, "" for the default Firestore database
		billing   map[string]any
		orders    string // orders' collectionPrefix, "" for the default
		wantError string // substring of the only error, "" for none
		prefixes  map[string]string
	}{
		{name: "defaults are per pipeline", billing: map[string]any{},
			prefixes: map[string]string{"orders": "eventpipe_orders_", "ingest-heartbeat": "eventpipe_ingest_heartbeat_"}},
		{name: "same prefix, other database", billing: map[string]any{"store": "firestore://acme-dev/billing", "collectionPrefix": "eventpipe_orders_"},
			prefixes: map[string]string{"orders": "eventpipe_orders_", "ingest-heartbeat": "eventpipe_ingest_heartbeat_"}},
		{name: "same prefix, other project", billing: map[string]any{"store": "firestore://acme-shared/(default)", "collectionPrefix": "eventpipe_orders_"}},
		{name: "same prefix, same database", billing: map[string]any{"store": "firestore://acme-dev/(default)", "collectionPrefix": "eventpipe_orders_"},
			wantError: "pipeline billing uses it in firestore://acme-dev/(default)"},
		{name: "explicit prefix taken by another default", billing: map[string]any{"collectionPrefix": "shared_"}, orders: "shared_",
			wantError: "pipeline billing uses it in firestore://acme-dev/(default)"},
		{name: "bbolt stores are per instance", store: "bbolt:///var/lib/eventpipe.db", billing: map[string]any{"collectionPrefix": "eventpipe_orders_"}},
		{name: "mem stores are per instance", store: "mem://", billing: map[string]any{"collectionPrefix": "eventpipe_orders_"}},
		{name: "same PostgreSQL store", store: "postgres://db.internal/eventpipe", billing: map[string]any{"collectionPrefix": "eventpipe_orders_"},
			wantError: "pipeline billing uses it in postgres://db.internal/eventpipe"},
		{name: "other PostgreSQL store", store: "postgres://db.internal/eventpipe", billing: map[string]any{"store": "postgres://db2.internal/eventpipe", "collectionPrefix": "eventpipe_orders_"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := baseConfig()
			if tc.store != "" {
				set(cfg, "eventpipe:store", "", tc.store)
			}
			set(cfg, pl, "billing", pipeline(tc.billing))
			set(cfg, pl, "ingest-heartbeat", pipeline(map[string]any{}))
			if tc.orders != "" {
				set(cfg, pl, "orders.consumer.collectionPrefix", tc.orders)
			}
			st, errs := load(t, cfg)
			if tc.wantError == "" {
				if errs != nil {
					t.Fatal(errs)
				}
				for name, want := range tc.prefixes {
					if got := st.Pipelines[name].Consumer.CollectionPrefix; got != want {
						t.Errorf("%s collectionPrefix = %q, want %q", name, got, want)
					}
				}
				return
			}
			if len(errs) != 1 || !strings.Contains(errs[0].Error(), tc.wantError) {
				t.Fatalf("errors = %v, want one containing %q", errs, tc.wantError)
			}
			if e := errs[0]; e.Pipeline != "orders" || e.Path != pl+".orders.consumer.collectionPrefix" || !strings.Contains(e.Fix, "eventpipe_orders_") {
				t.Errorf("error = %q: want it on orders' collectionPrefix with the default as the fix", e.Error())
			}
		})
	}
}

// TestSharedSecretStoreNotEchoed: a collection clash in a secret store names
// the config key, never the URL.
func TestSharedSecretStoreNotEchoed(t *testing.T) {
	cfg := baseConfig()
	cfg["eventpipe:pipelines"].(map[string]any)["billing"] = map[string]any{
		"consumer":      map[string]any{"image": "r/x:1", "collectionPrefix": "eventpipe_orders_"},
		"subscriptions": map[string]any{"a": map[string]any{"delivery": "push"}},
	}
	src := source(t, cfg)
	src.Values["eventpipe:store"] = "postgres://app:hunter2@db.internal/eventpipe"
	src.Secrets["eventpipe:store"] = true
	_, err := spec.Load("dev", src)
	if err == nil || strings.Contains(err.Error(), "hunter2") || !strings.Contains(err.Error(), "pipeline billing uses it in eventpipe:store") {
		t.Errorf("err = %v, want the clash reported without the secret URL", err)
	}
}
