package ownership

import (
	"strconv"
	"strings"
	"testing"

	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"cloud.google.com/go/run/apiv2/runpb"

	"github.com/eventpipe/eventpipe/spec"
)

func TestOfSubscription(t *testing.T) {
	gen2 := &runpb.Service{Name: "projects/p/locations/us-west1/services/resize", Labels: map[string]string{"goog-managed-by": "cloudfunctions"}}
	plain := &runpb.Service{Name: "projects/p/locations/us-west1/services/api"}
	appspot := &pubsubpb.PushConfig{PushEndpoint: "https://0ce9-dot-o46f-tp.appspot.com/_ah/push-handlers/pubsub/projects/p/topics/t?pubsub_trigger=true"}
	cases := []struct {
		name    string
		sub     *pubsubpb.Subscription
		target  *runpb.Service
		kind    Kind
		trigger string
		region  string
	}{
		{"pulumi label", &pubsubpb.Subscription{Name: "projects/p/subscriptions/a", Labels: map[string]string{"goog-pulumi-provisioned": "true"}}, nil, Pulumi, "", ""},
		{"terraform label", &pubsubpb.Subscription{Name: "projects/p/subscriptions/a", Labels: map[string]string{"goog-terraform-provisioned": "true"}}, nil, Terraform, "", ""},
		{"managed-by label", &pubsubpb.Subscription{Name: "projects/p/subscriptions/a", Labels: map[string]string{"managed-by": "Terraform"}}, nil, Terraform, "", ""},
		{"eventpipe component", &pubsubpb.Subscription{Name: "projects/p/subscriptions/a", Labels: map[string]string{"eventpipe_pipeline": "orders"}}, nil, Pulumi, "", ""},
		{"opt-out label alone is no owner", &pubsubpb.Subscription{Name: "projects/p/subscriptions/a", Labels: map[string]string{"eventpipe_dlq_opt_out": "true"}}, nil, Unmanaged, "", ""},
		{"eventarc label and name", &pubsubpb.Subscription{Name: "projects/p/subscriptions/eventarc-us-west1-data-collection-bay-area-511-event-073018-sub-940", Labels: map[string]string{"goog-eventarc": ""}}, plain, Eventarc, "data-collection-bay-area-511-event", "us-west1"},
		{"eventarc name without number", &pubsubpb.Subscription{Name: "projects/p/subscriptions/eventarc-europe-west2-govuk-integration-database-backups-sub-934"}, nil, Eventarc, "govuk-integration-database-backups", "europe-west2"},
		{"eventarc to a 2nd gen function", &pubsubpb.Subscription{Name: "projects/p/subscriptions/eventarc-us-west1-resize-753210-sub-502", Labels: map[string]string{"goog-eventarc": ""}}, gen2, CloudFunctions, "resize", "us-west1"},
		{"1st gen function", &pubsubpb.Subscription{Name: "projects/p/subscriptions/gcf-fetch_and_write-us-central1-alpha-readings", PushConfig: appspot}, nil, CloudFunctions, "fetch_and_write", "us-central1"},
		{"older 1st gen name", &pubsubpb.Subscription{Name: "projects/p/subscriptions/gcf-daq_firestore-daq_runner", PushConfig: appspot}, nil, CloudFunctions, "", ""},
		{"gcf- name without the push handler", &pubsubpb.Subscription{Name: "projects/p/subscriptions/gcf-reports"}, nil, Unmanaged, "", ""},
		{"nothing", &pubsubpb.Subscription{Name: "projects/p/subscriptions/orders"}, nil, Unmanaged, "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := OfSubscription(tc.sub, tc.target)
			if o.Kind != tc.kind || o.Trigger != tc.trigger || o.Region != tc.region || o.Evidence == "" {
				t.Fatalf("owner %+v, want %s trigger %q region %q", o, tc.kind, tc.trigger, tc.region)
			}
		})
	}
}

func TestOfTopicAndService(t *testing.T) {
	if o := OfTopic(&pubsubpb.Topic{Name: "projects/p/topics/eventarc-us-central1-events-trigger-1-349", Labels: map[string]string{"goog-eventarc": ""}}); o.Kind != Eventarc || o.Trigger != "events-trigger-1" || o.Region != "us-central1" {
		t.Errorf("eventarc topic: %+v", o)
	}
	if o := OfTopic(&pubsubpb.Topic{Name: "projects/p/topics/orders"}); o.Kind != Unmanaged {
		t.Errorf("plain topic: %+v", o)
	}
	if o := OfService(&runpb.Service{Name: "projects/p/locations/r/services/f", Labels: map[string]string{"goog-managed-by": "cloudfunctions", "goog-terraform-provisioned": "true"}}); o.Kind != CloudFunctions || o.Trigger != "f" {
		t.Errorf("function service: %+v", o)
	}
	if o := OfService(&runpb.Service{Name: "projects/p/locations/r/services/api", Labels: map[string]string{"goog-pulumi-provisioned": "true"}}); o.Kind != Pulumi {
		t.Errorf("pulumi service: %+v", o)
	}
}

func TestFix(t *testing.T) {
	sub := Target{Project: "p", Subscription: "projects/p/subscriptions/s", DeadLetterTopic: "projects/p/topics/s.dlq"}
	cases := []struct {
		owner  Owner
		rule   string
		target Target
		want   []string
		not    []string
	}{
		{Owner{Kind: Terraform}, "EP001", sub, []string{"Terraform configuration", "terraform apply"}, []string{"gcloud"}},
		{Owner{Kind: Pulumi}, "EP003", sub, []string{"Pulumi program", "pulumi up"}, []string{"gcloud"}},
		{Owner{Kind: Unmanaged}, "EP003", sub, []string{"gcloud pubsub subscriptions update s --min-retry-delay=10s --max-retry-delay=600s --project=p", "import"}, nil},
		{Owner{Kind: Eventarc, Trigger: "t", Region: "r"}, "EP002", sub, []string{"Eventarc trigger t (r)", "#17697", "--max-delivery-attempts=" + strconv.Itoa(spec.DefaultMaxDeliveryAttempts)}, nil},
		{Owner{Kind: CloudFunctions, Trigger: "f"}, "EP001", sub, []string{"function f", "#25069", "gcloud pubsub topics create s.dlq"}, nil},
		{Owner{Kind: Unmanaged}, "EP006", sub, []string{"add-iam-policy-binding projects/p/topics/s.dlq", "$(gcloud projects describe p --format='value(projectNumber)')", "roles/pubsub.publisher"}, nil},
		{Owner{Kind: Unmanaged}, "EP007", Target{Project: "p", Number: "42", Subscription: "projects/p/subscriptions/s"}, []string{"service-42@gcp-sa-pubsub.iam.gserviceaccount.com", "roles/pubsub.subscriber"}, nil},
		{Owner{Kind: CloudFunctions, Trigger: "f"}, "EP010", Target{Project: "p", Service: "f", Region: "r"}, []string{"Cloud Run service of function f", "remove-iam-policy-binding f --region=r --project=p --member=allUsers"}, []string{"subscription"}},
		{Owner{Kind: Unmanaged}, "EP101", sub, []string{"No infrastructure code"}, []string{"Command"}},
	}
	for _, tc := range cases {
		got := Fix(tc.owner, tc.rule, tc.target)
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s %s: fix %q lacks %q", tc.owner.Kind, tc.rule, got, w)
			}
		}
		for _, n := range tc.not {
			if strings.Contains(got, n) {
				t.Errorf("%s %s: fix %q has %q", tc.owner.Kind, tc.rule, got, n)
			}
		}
	}
}
