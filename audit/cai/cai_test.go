package cai

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"

	"github.com/eventpipe/eventpipe/audit/inventory"
)

func fixtures() Files {
	return Files{
		Resources: []string{filepath.Join("testdata", "resources.json")},
		IAM:       []string{filepath.Join("testdata", "iam.json")},
		Search:    []string{filepath.Join("testdata", "search.json")},
	}
}

func project(t *testing.T, inv *inventory.Inventory, id string) *inventory.Project {
	t.Helper()
	for _, p := range inv.Projects {
		if p.ID == id {
			return p
		}
	}
	t.Fatalf("no project %s among %d", id, len(inv.Projects))
	return nil
}

func subscription(t *testing.T, p *inventory.Project, id string) *pubsubpb.Subscription {
	t.Helper()
	for _, s := range p.Subscriptions {
		if s.GetName() == "projects/"+p.ID+"/subscriptions/"+id {
			return s
		}
	}
	t.Fatalf("no subscription %s in %s", id, p.ID)
	return nil
}

func TestReadOrganisation(t *testing.T) {
	inv, err := Read(fixtures())
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, p := range inv.Projects {
		ids = append(ids, p.ID)
	}
	if got := strings.Join(ids, " "); got != "legacy-ops payments-dev shop-prod" {
		t.Fatalf("projects %q", got)
	}

	shop := project(t, inv, "shop-prod")
	if shop.Number != "111111111111" || len(shop.Topics) != 3 || len(shop.Subscriptions) != 3 {
		t.Fatalf("shop-prod: number %q, %d topics, %d subscriptions", shop.Number, len(shop.Topics), len(shop.Subscriptions))
	}
	orders := subscription(t, shop, "orders-sub")
	if orders.GetName() != "projects/shop-prod/subscriptions/orders-sub" ||
		orders.GetDeadLetterPolicy().GetMaxDeliveryAttempts() != 10 ||
		orders.GetRetryPolicy().GetMaximumBackoff().GetSeconds() != 600 ||
		orders.GetExpirationPolicy() == nil || orders.GetExpirationPolicy().GetTtl() != nil ||
		orders.GetPushConfig().GetOidcToken().GetServiceAccountEmail() != "orders-push@shop-prod.iam.gserviceaccount.com" {
		t.Fatalf("orders-sub read as %v", orders)
	}
	// Both Cloud Run services are targeted by a push subscription; the v1 (Knative) data
	// gives the v2 settings.
	if len(shop.Services) != 2 {
		t.Fatalf("%d services", len(shop.Services))
	}
	invoice := shop.Services[0]
	if invoice.GetName() != "projects/shop-prod/locations/europe-west1/services/invoice" || invoice.GetIngress().String() != "INGRESS_TRAFFIC_ALL" ||
		invoice.GetLabels()["goog-managed-by"] != "cloudfunctions" || invoice.GetUri() != "https://invoice-k3x7q2mnaa-ew.a.run.app" {
		t.Fatalf("invoice read as %v", invoice)
	}
	if ing := shop.Services[1].GetIngress().String(); ing != "INGRESS_TRAFFIC_INTERNAL_ONLY" {
		t.Fatalf("orders-consumer ingress %s", ing)
	}
	if env := shop.Services[1].GetTemplate().GetContainers()[0].GetEnv()[1]; env.GetValueSource().GetSecretKeyRef().GetSecret() != "orders-db" {
		t.Fatalf("secret env read as %v", env)
	}
	if pol := shop.Policies["projects/shop-prod/locations/europe-west1/services/invoice"]; len(pol.GetBindings()) != 1 || pol.GetBindings()[0].GetMembers()[0] != "allUsers" {
		t.Fatalf("invoice policy %v", pol)
	}
	// The project's policy is named by number in the export.
	if pol := shop.Policies["projects/shop-prod"]; len(pol.GetBindings()) != 3 || pol.GetBindings()[2].GetCondition().GetTitle() != "until-2027" {
		t.Fatalf("project policy %v", pol)
	}
	// A topic without a policy line has an empty policy: the export covers the project.
	if pol, ok := shop.Policies["projects/shop-prod/topics/orders"]; !ok || len(pol.GetBindings()) != 0 {
		t.Fatalf("orders topic policy %v (read %v)", pol, ok)
	}
	if !shop.AlertPoliciesRead || len(shop.AlertPolicies) != 3 || !shop.TTLFieldsRead {
		t.Fatalf("shop-prod alert policies read %v (%d), TTL read %v", shop.AlertPoliciesRead, len(shop.AlertPolicies), shop.TTLFieldsRead)
	}

	pay := project(t, inv, "payments-dev")
	if pay.Number != "222222222222" || len(pay.Subscriptions) != 3 || !pay.AlertPoliciesRead || len(pay.AlertPolicies) != 0 {
		t.Fatalf("payments-dev: %q, %d subscriptions, alerts read %v", pay.Number, len(pay.Subscriptions), pay.AlertPoliciesRead)
	}
	if bq := subscription(t, pay, "ledger-to-bq"); bq.GetBigqueryConfig().GetTable() != "payments-dev.ledger.events" {
		t.Fatalf("BigQuery subscription read as %v", bq)
	}
	if gcs := subscription(t, pay, "ledger-archive"); gcs.GetCloudStorageConfig().GetMaxBytes() != 104857600 || !gcs.GetCloudStorageConfig().GetAvroConfig().GetWriteMetadata() {
		t.Fatalf("Cloud Storage subscription read as %v", gcs)
	}

	// legacy-ops is only in the search results: one subscription with its resource, one
	// without (its settings unknown); neither its policies nor its alert policies are known.
	legacy := project(t, inv, "legacy-ops")
	if legacy.Number != "333333333333" || len(legacy.Subscriptions) != 2 {
		t.Fatalf("legacy-ops: %q, %d subscriptions", legacy.Number, len(legacy.Subscriptions))
	}
	if !legacy.Unshown["projects/legacy-ops/subscriptions/nightly-report-sub"] || legacy.Unshown["projects/legacy-ops/subscriptions/audit-sink"] {
		t.Fatalf("unshown %v", legacy.Unshown)
	}
	if l := subscription(t, legacy, "nightly-report-sub").GetLabels(); l["owner"] != "ops" {
		t.Fatalf("nightly-report-sub labels %v", l)
	}
	if legacy.AlertPoliciesRead || !legacy.HasGap(inventory.GapPolicy, "projects/legacy-ops/subscriptions/audit-sink") {
		t.Fatalf("legacy-ops alerts read %v, gaps %v", legacy.AlertPoliciesRead, legacy.Gaps)
	}
}

func TestReadWithoutIAMExport(t *testing.T) {
	files := fixtures()
	files.IAM = nil
	inv, err := Read(files)
	if err != nil {
		t.Fatal(err)
	}
	shop := project(t, inv, "shop-prod")
	if len(shop.Policies) != 0 || !shop.HasGap(inventory.GapPolicy, "projects/shop-prod/topics/orders.dlq") {
		t.Fatalf("policies %v, gaps %v", shop.Policies, shop.Gaps)
	}
}

func TestReadErrorsNameFileAndLine(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	good, err := os.ReadFile(filepath.Join("testdata", "resources.json"))
	if err != nil {
		t.Fatal(err)
	}
	firstLine := strings.SplitN(string(good), "\n", 2)[0]
	cases := []struct {
		name  string
		files Files
		want  string
	}{
		{"nothing", Files{}, "no Cloud Asset Inventory file"},
		{"missing file", Files{Resources: []string{filepath.Join(dir, "absent.json")}}, "absent.json"},
		{"not JSON", Files{Resources: []string{write("bad.json", firstLine+"\n{oops\n")}}, "bad.json:2: not a Cloud Asset Inventory asset"},
		{"no asset type", Files{Resources: []string{write("noname.json", `{"name":"//pubsub.googleapis.com/projects/p/topics/t"}`+"\n")}}, `noname.json:1: an exported asset has "name" and "asset_type"`},
		{"wrong resource data", Files{Resources: []string{write("wrong.json",
			`{"name":"//pubsub.googleapis.com/projects/p/subscriptions/s","asset_type":"pubsub.googleapis.com/Subscription","resource":{"data":{"ackDeadlineSeconds":"soon"}}}`+"\n")}},
			"wrong.json:1: //pubsub.googleapis.com/projects/p/subscriptions/s: the resource data is not a Pub/Sub Subscription"},
		{"resource export given as IAM", Files{IAM: []string{filepath.Join("testdata", "resources.json")}}, "has no iam_policy: export with --content-type=iam-policy"},
		{"search result array of garbage", Files{Search: []string{write("search.json", `[{"assetType":"pubsub.googleapis.com/Topic"}]`)}}, `search.json: item 1: a search result has "name" and "assetType"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Read(tc.files)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want it to contain %q", err, tc.want)
			}
		})
	}
}
