package model

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/firestore/apiv1/admin/adminpb"
	"cloud.google.com/go/iam/apiv1/iampb"
	"cloud.google.com/go/monitoring/apiv3/v2/monitoringpb"
	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"cloud.google.com/go/run/apiv2/runpb"
	"github.com/pulumi/pulumi-gcp/sdk/v8/go/gcp/cloudrunv2"
	"github.com/pulumi/pulumi-gcp/sdk/v8/go/gcp/firestore"
	"github.com/pulumi/pulumi-gcp/sdk/v8/go/gcp/monitoring"
	"github.com/pulumi/pulumi-gcp/sdk/v8/go/gcp/projects"
	"github.com/pulumi/pulumi-gcp/sdk/v8/go/gcp/pubsub"
	"google.golang.org/genproto/googleapis/type/expr"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/eventpipe/eventpipe/audit/inventory"
)

const service = "projects/p/locations/europe-west1/services/consumer"

// fullProject sets every setting the model carries.
func fullProject() *inventory.Project {
	p := &inventory.Project{ID: "p", Number: "42", AlertPoliciesRead: true, TTLFieldsRead: true}
	p.Topics = []*pubsubpb.Topic{
		{Name: "projects/p/topics/orders", Labels: map[string]string{"team": "a"}, KmsKeyName: "k",
			MessageRetentionDuration: durationpb.New(time.Hour),
			MessageStoragePolicy:     &pubsubpb.MessageStoragePolicy{AllowedPersistenceRegions: []string{"europe-west1"}},
			SchemaSettings:           &pubsubpb.SchemaSettings{Schema: "projects/p/schemas/s", Encoding: pubsubpb.Encoding_JSON}},
		{Name: "projects/p/topics/orders.dlq"},
	}
	p.Subscriptions = []*pubsubpb.Subscription{
		{Name: "projects/p/subscriptions/push", Topic: "projects/p/topics/orders", AckDeadlineSeconds: 30,
			Labels: map[string]string{"x": "y"}, MessageRetentionDuration: durationpb.New(90 * time.Minute),
			RetainAckedMessages: true, EnableMessageOrdering: true, EnableExactlyOnceDelivery: true, Filter: `attributes.k = "v"`,
			ExpirationPolicy: &pubsubpb.ExpirationPolicy{},
			DeadLetterPolicy: &pubsubpb.DeadLetterPolicy{DeadLetterTopic: "projects/p/topics/orders.dlq", MaxDeliveryAttempts: 7},
			RetryPolicy:      &pubsubpb.RetryPolicy{MinimumBackoff: durationpb.New(1500 * time.Millisecond), MaximumBackoff: durationpb.New(10 * time.Minute)},
			PushConfig: &pubsubpb.PushConfig{PushEndpoint: "https://consumer-x-ew.a.run.app/push", Attributes: map[string]string{"x-goog-version": "v1"},
				AuthenticationMethod: &pubsubpb.PushConfig_OidcToken_{OidcToken: &pubsubpb.PushConfig_OidcToken{ServiceAccountEmail: "sa@p.iam.gserviceaccount.com", Audience: "aud"}},
				Wrapper:              &pubsubpb.PushConfig_NoWrapper_{NoWrapper: &pubsubpb.PushConfig_NoWrapper{WriteMetadata: true}}},
			MessageTransforms: []*pubsubpb.MessageTransform{{Transform: &pubsubpb.MessageTransform_JavascriptUdf{JavascriptUdf: &pubsubpb.JavaScriptUDF{FunctionName: "f", Code: "function f(m){return m}"}}}},
		},
		{Name: "projects/p/subscriptions/bq", Topic: "projects/p/topics/orders", AckDeadlineSeconds: 10, PushConfig: &pubsubpb.PushConfig{},
			BigqueryConfig: &pubsubpb.BigQueryConfig{Table: "p.d.t", UseTableSchema: true, WriteMetadata: true, DropUnknownFields: true, ServiceAccountEmail: "bq@p"}},
		{Name: "projects/p/subscriptions/gcs", Topic: "projects/p/topics/orders", AckDeadlineSeconds: 10,
			CloudStorageConfig: &pubsubpb.CloudStorageConfig{Bucket: "b", FilenamePrefix: "a/", FilenameSuffix: ".avro", FilenameDatetimeFormat: "YYYY-MM-DD",
				MaxDuration: durationpb.New(5 * time.Minute), MaxBytes: 1000, MaxMessages: 10, ServiceAccountEmail: "gcs@p",
				OutputFormat: &pubsubpb.CloudStorageConfig_AvroConfig_{AvroConfig: &pubsubpb.CloudStorageConfig_AvroConfig{WriteMetadata: true, UseTopicSchema: true}}}},
	}
	p.Services = []*runpb.Service{{
		Name: service, Uri: "https://consumer-x-ew.a.run.app", Description: "d", Labels: map[string]string{"l": "v"},
		Ingress: runpb.IngressTraffic_INGRESS_TRAFFIC_INTERNAL_ONLY, InvokerIamDisabled: true, CustomAudiences: []string{"aud"},
		Template: &runpb.RevisionTemplate{ServiceAccount: "run@p", Timeout: durationpb.New(time.Minute), MaxInstanceRequestConcurrency: 80,
			Scaling: &runpb.RevisionScaling{MinInstanceCount: 1, MaxInstanceCount: 3}, Labels: map[string]string{"t": "v"},
			Containers: []*runpb.Container{{Name: "c", Image: "i", Env: []*runpb.EnvVar{
				{Name: "A", Values: &runpb.EnvVar_Value{Value: "1"}},
				{Name: "S", Values: &runpb.EnvVar_ValueSource{ValueSource: &runpb.EnvVarSource{SecretKeyRef: &runpb.SecretKeySelector{Secret: "s", Version: "latest"}}}},
			}}}},
	}}
	for _, name := range []string{"projects/p/topics/orders", "projects/p/topics/orders.dlq", "projects/p/subscriptions/push",
		"projects/p/subscriptions/bq", "projects/p/subscriptions/gcs", service, "projects/p"} {
		p.SetPolicy(name, &iampb.Policy{Bindings: []*iampb.Binding{{Role: "roles/viewer", Members: []string{"user:a@example.com"}}}})
	}
	cond := func(c *monitoringpb.AlertPolicy_Condition) *monitoringpb.AlertPolicy {
		return &monitoringpb.AlertPolicy{Name: "projects/p/alertPolicies/1", DisplayName: "a", Enabled: wrapperspb.Bool(false),
			NotificationChannels: []string{"projects/p/notificationChannels/1"}, UserLabels: map[string]string{"u": "v"},
			Conditions: []*monitoringpb.AlertPolicy_Condition{c}}
	}
	dur := durationpb.New(time.Minute)
	p.AlertPolicies = []*monitoringpb.AlertPolicy{
		cond(&monitoringpb.AlertPolicy_Condition{DisplayName: "t", Condition: &monitoringpb.AlertPolicy_Condition_ConditionThreshold{
			ConditionThreshold: &monitoringpb.AlertPolicy_Condition_MetricThreshold{Filter: "f", DenominatorFilter: "g", Duration: dur, ThresholdValue: 1}}}),
		cond(&monitoringpb.AlertPolicy_Condition{Condition: &monitoringpb.AlertPolicy_Condition_ConditionAbsent{
			ConditionAbsent: &monitoringpb.AlertPolicy_Condition_MetricAbsence{Filter: "f", Duration: dur}}}),
		cond(&monitoringpb.AlertPolicy_Condition{Condition: &monitoringpb.AlertPolicy_Condition_ConditionPrometheusQueryLanguage{
			ConditionPrometheusQueryLanguage: &monitoringpb.AlertPolicy_Condition_PrometheusQueryLanguageCondition{Query: "q", Duration: dur}}}),
		cond(&monitoringpb.AlertPolicy_Condition{Condition: &monitoringpb.AlertPolicy_Condition_ConditionMonitoringQueryLanguage{
			ConditionMonitoringQueryLanguage: &monitoringpb.AlertPolicy_Condition_MonitoringQueryLanguageCondition{Query: "q", Duration: dur}}}),
		cond(&monitoringpb.AlertPolicy_Condition{Condition: &monitoringpb.AlertPolicy_Condition_ConditionMatchedLog{
			ConditionMatchedLog: &monitoringpb.AlertPolicy_Condition_LogMatch{Filter: "f"}}}),
	}
	for i, ap := range p.AlertPolicies {
		ap.Name = "projects/p/alertPolicies/" + string(rune('1'+i))
	}
	p.TTLFields = []*adminpb.Field{{Name: "projects/p/databases/(default)/collectionGroups/c/fields/expireAt",
		TtlConfig: &adminpb.Field_TtlConfig{State: adminpb.Field_TtlConfig_ACTIVE}}}
	return p
}

// argsType is the pulumi-gcp input type of each resource type the model writes.
var argsType = map[string]reflect.Type{
	TypeTopic:                 pubsub.TopicArgs{}.ElementType(),
	TypeSubscription:          pubsub.SubscriptionArgs{}.ElementType(),
	TypeTopicIAMPolicy:        pubsub.TopicIAMPolicyArgs{}.ElementType(),
	TypeSubscriptionIAMPolicy: pubsub.SubscriptionIAMPolicyArgs{}.ElementType(),
	TypeProjectIAMPolicy:      projects.IAMPolicyArgs{}.ElementType(),
	TypeService:               cloudrunv2.ServiceArgs{}.ElementType(),
	TypeServiceIAMPolicy:      cloudrunv2.ServiceIamPolicyArgs{}.ElementType(),
	TypeAlertPolicy:           monitoring.AlertPolicyArgs{}.ElementType(),
	TypeField:                 firestore.FieldArgs{}.ElementType(),
}

// TestInputNamesArePulumiGCPs checks every input the model writes, at every depth,
// against the `pulumi:"…"` names of the pulumi-gcp v8 SDK's input types.
func TestInputNamesArePulumiGCPs(t *testing.T) {
	doc := Build(&inventory.Inventory{Projects: []*inventory.Project{fullProject()}})
	seen := map[string]bool{}
	for _, r := range doc.Resources {
		typ, ok := argsType[r.Type]
		if !ok {
			t.Fatalf("%s: type %s has no pulumi-gcp input type in the test", r.URN, r.Type)
		}
		seen[r.Type] = true
		checkNames(t, r.URN, r.Inputs, typ)
	}
	if len(seen) != len(argsType) {
		t.Fatalf("the model wrote %d of the %d resource types", len(seen), len(argsType))
	}
}

func checkNames(t *testing.T, path string, v any, typ reflect.Type) {
	t.Helper()
	for typ.Kind() == reflect.Pointer || typ.Kind() == reflect.Slice {
		typ = typ.Elem()
	}
	switch val := v.(type) {
	case map[string]any:
		if typ.Kind() == reflect.Map {
			return // labels, attributes: the keys are the user's
		}
		fields := map[string]reflect.Type{}
		for i := 0; i < typ.NumField(); i++ {
			if name := typ.Field(i).Tag.Get("pulumi"); name != "" {
				fields[name] = typ.Field(i).Type
			}
		}
		for k, e := range val {
			ft, ok := fields[k]
			if !ok {
				t.Errorf("%s.%s: pulumi-gcp's %s has no input %q", path, k, typ.Name(), k)
				continue
			}
			checkNames(t, path+"."+k, e, ft)
		}
	case []any:
		for _, e := range val {
			checkNames(t, path+"[]", e, typ)
		}
	}
}

// TestModelValues checks the values the rules read: durations in the API's form, the
// expiration policy that never expires, pull subscriptions without a push block, the IAM
// policy as the provider encodes policyData, and references as propertyDependencies.
func TestModelValues(t *testing.T) {
	doc := Build(&inventory.Inventory{Projects: []*inventory.Project{fullProject()}})
	get := func(typ, name string) Resource {
		t.Helper()
		urn, ok := doc.URN(typ, name)
		if !ok {
			t.Fatalf("no %s %s", typ, name)
		}
		r, _ := doc.Resource(urn)
		return r
	}
	push := get(TypeSubscription, "projects/p/subscriptions/push").Inputs
	for path, want := range map[string]any{
		"expirationPolicy.ttl":                 "",
		"retryPolicy.minimumBackoff":           "1.5s",
		"retryPolicy.maximumBackoff":           "600s",
		"messageRetentionDuration":             "5400s",
		"deadLetterPolicy.maxDeliveryAttempts": 7,
		"pushConfig.oidcToken.audience":        "aud",
		"name":                                 "push",
		"topic":                                "projects/p/topics/orders",
	} {
		if got := lookup(push, path); got != want {
			t.Errorf("push subscription %s = %#v, want %#v", path, got, want)
		}
	}
	if _, ok := get(TypeSubscription, "projects/p/subscriptions/bq").Inputs["pushConfig"]; ok {
		t.Error("a BigQuery subscription has a pushConfig block")
	}
	sub := get(TypeSubscription, "projects/p/subscriptions/push")
	if deps := sub.PropertyDependencies; len(deps["topic"]) != 1 || len(deps["deadLetterPolicy"]) != 1 || len(deps["pushConfig"]) != 1 ||
		!strings.HasSuffix(deps["pushConfig"][0], "::consumer") {
		t.Errorf("propertyDependencies %v", deps)
	}
	if got := get(TypeTopicIAMPolicy, "projects/p/topics/orders").Inputs["policyData"]; got != `{"bindings":[{"members":["user:a@example.com"],"role":"roles/viewer"}]}` {
		t.Errorf("policyData %v", got)
	}
	if got := lookup(get(TypeService, service).Inputs, "template.containers"); got == nil {
		t.Error("service without containers")
	}
	if ap := get(TypeAlertPolicy, "projects/p/alertPolicies/1").Inputs; ap["enabled"] != false {
		t.Errorf("an alert policy disabled reads enabled %v", ap["enabled"])
	}
}

func lookup(m map[string]any, path string) any {
	var v any = m
	for _, k := range strings.Split(path, ".") {
		mm, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = mm[k]
	}
	return v
}

func TestPolicyDataWithConditions(t *testing.T) {
	got := PolicyData(&iampb.Policy{Bindings: []*iampb.Binding{{
		Role: "roles/pubsub.publisher", Members: []string{"serviceAccount:a", "group:b"},
		Condition: &expr.Expr{Title: "until", Expression: `request.time < timestamp("2027-01-01T00:00:00Z")`},
	}}, AuditConfigs: []*iampb.AuditConfig{{Service: "allServices", AuditLogConfigs: []*iampb.AuditLogConfig{{LogType: iampb.AuditLogConfig_DATA_READ}}}}})
	want := `{"auditConfigs":[{"auditLogConfigs":[{"logType":"DATA_READ"}],"service":"allServices"}],"bindings":[{"condition":{"expression":"request.time \u003c timestamp(\"2027-01-01T00:00:00Z\")","title":"until"},"members":["serviceAccount:a","group:b"],"role":"roles/pubsub.publisher"}]}`
	if got != want {
		t.Fatalf("policyData\n got %s\nwant %s", got, want)
	}
	if PolicyData(&iampb.Policy{}) != "{}" {
		t.Fatalf("empty policy as %s", PolicyData(&iampb.Policy{}))
	}
}

// TestUnreadIsUnknown checks that what could not be read reaches the rules as unknown.
func TestUnreadIsUnknown(t *testing.T) {
	p := fullProject()
	delete(p.Policies, "projects/p/topics/orders.dlq")
	p.AddGap(inventory.GapPolicy, "projects/p/topics/orders.dlq", "denied")
	delete(p.Policies, "projects/p/subscriptions/bq") // neither read nor a gap: no resource
	p.AlertPolicies, p.AlertPoliciesRead = nil, false
	p.TTLFields, p.TTLFieldsRead = nil, false
	p.SetUnshown("projects/p/subscriptions/gcs", true)
	doc := Build(&inventory.Inventory{Projects: []*inventory.Project{p}})
	urn, _ := doc.URN(TypeTopicIAMPolicy, "projects/p/topics/orders.dlq")
	if r, _ := doc.Resource(urn); r.Inputs["policyData"] != UnknownValue {
		t.Errorf("unread policy as %v", r.Inputs["policyData"])
	}
	if _, ok := doc.URN(TypeSubscriptionIAMPolicy, "projects/p/subscriptions/bq"); ok {
		t.Error("a policy neither read nor missed is in the model")
	}
	placeholders := 0
	for _, r := range doc.Resources {
		switch {
		case r.Type == TypeAlertPolicy:
			placeholders++
			if r.Inputs["conditions"] != UnknownValue {
				t.Errorf("alert policy placeholder %v", r.Inputs)
			}
		case r.Type == TypeField:
			placeholders++
			if r.Inputs["collection"] != UnknownValue {
				t.Errorf("TTL placeholder %v", r.Inputs)
			}
		}
	}
	if placeholders != 2 {
		t.Errorf("%d placeholders, want an alert policy and a field", placeholders)
	}
	urn, _ = doc.URN(TypeSubscription, "projects/p/subscriptions/gcs")
	if r, _ := doc.Resource(urn); r.Inputs["deadLetterPolicy"] != UnknownValue || r.Inputs["retryPolicy"] != UnknownValue {
		t.Errorf("a subscription whose settings are not shown as %v", r.Inputs)
	}
}

// TestSplit groups projects that refer to one another and keeps the others apart.
func TestSplit(t *testing.T) {
	a := &inventory.Project{ID: "a", AlertPoliciesRead: true, TTLFieldsRead: true,
		Topics:        []*pubsubpb.Topic{{Name: "projects/a/topics/t"}},
		Subscriptions: []*pubsubpb.Subscription{{Name: "projects/a/subscriptions/s", Topic: "projects/a/topics/t", DeadLetterPolicy: &pubsubpb.DeadLetterPolicy{DeadLetterTopic: "projects/b/topics/dlq"}}}}
	b := &inventory.Project{ID: "b", AlertPoliciesRead: true, TTLFieldsRead: true, Topics: []*pubsubpb.Topic{{Name: "projects/b/topics/dlq"}}}
	c := &inventory.Project{ID: "c", AlertPoliciesRead: true, TTLFieldsRead: true, Topics: []*pubsubpb.Topic{{Name: "projects/c/topics/t"}}}
	parts := Build(&inventory.Inventory{Projects: []*inventory.Project{c, b, a}}).Split()
	var got []string
	for _, part := range parts {
		projects := map[string]bool{}
		for _, r := range part.Resources {
			projects[r.Project] = true
		}
		var ids []string
		for _, id := range []string{"a", "b", "c"} {
			if projects[id] {
				ids = append(ids, id)
			}
		}
		got = append(got, strings.Join(ids, "+"))
	}
	if strings.Join(got, " ") != "a+b c" {
		t.Fatalf("groups %v, want a+b and c", got)
	}
}

// TestUnreadLinksNameTheirGroupsTopics: a subscription whose topic and dead-letter topic
// were not read may name any topic of its own group of projects (a+b, which refer to one
// another), and none of another group (c); a group without topics leaves an empty list,
// "outside the document", not "anything".
func TestUnreadLinksNameTheirGroupsTopics(t *testing.T) {
	unread := func(project string) *inventory.Project {
		p := &inventory.Project{ID: project, Subscriptions: []*pubsubpb.Subscription{{Name: "projects/" + project + "/subscriptions/unread"}}}
		p.SetUnshown("projects/"+project+"/subscriptions/unread", true)
		return p
	}
	a := unread("a")
	a.Topics = []*pubsubpb.Topic{{Name: "projects/a/topics/t"}}
	a.Subscriptions = append(a.Subscriptions, &pubsubpb.Subscription{Name: "projects/a/subscriptions/s", Topic: "projects/a/topics/t",
		DeadLetterPolicy: &pubsubpb.DeadLetterPolicy{DeadLetterTopic: "projects/b/topics/dlq"}})
	b := &inventory.Project{ID: "b", Topics: []*pubsubpb.Topic{{Name: "projects/b/topics/dlq"}}}
	c := &inventory.Project{ID: "c", Topics: []*pubsubpb.Topic{{Name: "projects/c/topics/t"}}}
	d := unread("d")
	doc := Build(&inventory.Inventory{Projects: []*inventory.Project{a, b, c, d}})
	want := map[string][]string{
		"a": {URNOf("a", TypeTopic, "t"), URNOf("b", TypeTopic, "dlq")},
		"d": {},
	}
	for project, topics := range want {
		r, _ := doc.Resource(URNOf(project, TypeSubscription, "unread"))
		for _, property := range []string{"topic", "deadLetterPolicy"} {
			got, ok := r.PossibleDependencies[property]
			slices.Sort(got)
			if !ok || got == nil || !slices.Equal(got, topics) {
				t.Errorf("%s's unread %s may name %v (set %v), want %v", project, property, got, ok, topics)
			}
		}
	}
	// What was read names its topics surely, with no candidates.
	if r, _ := doc.Resource(URNOf("a", TypeSubscription, "s")); r.PossibleDependencies != nil {
		t.Errorf("a read subscription has possible dependencies %v", r.PossibleDependencies)
	}
}

func TestStackExportShape(t *testing.T) {
	data, err := Build(&inventory.Inventory{Projects: []*inventory.Project{fullProject()}}).JSON()
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Version    int `json:"version"`
		Deployment struct {
			Resources []map[string]any `json:"resources"`
		} `json:"deployment"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Version != 3 || len(doc.Deployment.Resources) == 0 {
		t.Fatalf("version %d, %d resources", doc.Version, len(doc.Deployment.Resources))
	}
	for _, r := range doc.Deployment.Resources {
		urn, _ := r["urn"].(string)
		if !strings.HasPrefix(urn, "urn:pulumi:live::p::"+r["type"].(string)+"::") || r["custom"] != true || r["inputs"] == nil {
			t.Fatalf("resource %v", r)
		}
	}
}
