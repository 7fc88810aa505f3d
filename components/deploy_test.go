package components_test

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/eventpipe/eventpipe/components"
	"github.com/eventpipe/eventpipe/consumer/settings"
	"github.com/eventpipe/eventpipe/spec"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// withConsumer is baseStack with extra consumer settings (YAML at the
// consumer's indentation).
func withConsumer(extra string) string {
	return strings.Replace(baseStack, "        minInstances: 1\n", "        minInstances: 1\n"+extra, 1)
}

// loadErr loads a stack config document and returns its error.
func loadErr(doc string) error {
	f, err := spec.ParseStackFile("Pulumi.dev.yaml", []byte(doc))
	if err != nil {
		return err
	}
	_, err = components.LoadStack("dev", f.Source)
	return err
}

// privateIPv4 reports whether a is in 10/8, 172.16/12 or 192.168/16, by
// its bits (independently of netip.Addr.IsPrivate).
func privateIPv4(a [4]byte) bool {
	return a[0] == 10 || a[0] == 172 && a[1]&0xf0 == 16 || a[0] == 192 && a[1] == 168
}

// storeAddresses are the edges of the private ranges and addresses around them.
func storeAddresses() [][4]byte {
	var out [][4]byte
	for _, a := range [][4]byte{{10, 0, 0, 0}, {172, 16, 0, 0}, {192, 168, 0, 0}} {
		out = append(out, a)
	}
	out = append(out,
		[4]byte{9, 255, 255, 255}, [4]byte{10, 255, 255, 255}, [4]byte{11, 0, 0, 0},
		[4]byte{172, 15, 255, 255}, [4]byte{172, 31, 255, 255}, [4]byte{172, 32, 0, 0},
		[4]byte{192, 167, 255, 255}, [4]byte{192, 168, 255, 255}, [4]byte{192, 169, 0, 0},
		[4]byte{10, 0, 0, 5}, [4]byte{8, 8, 8, 8}, [4]byte{127, 0, 0, 1})
	return out
}

// TestPrivateStoreNeedsVPCEgress: a PostgreSQL store on a private address
// is refused without consumer.vpcAccess, naming the keys to set, and
// accepted with it; other addresses never need it. Every address at the
// edges of the three private ranges, written as the URL's host, with a
// port and as a host= parameter.
func TestPrivateStoreNeedsVPCEgress(t *testing.T) {
	for _, a := range storeAddresses() {
		ip := netip.AddrFrom4(a).String()
		for _, url := range []string{"postgres://app@" + ip + "/orders", "postgres://app@" + ip + ":5432/orders", "postgresql:///orders?host=" + ip} {
			for _, vpc := range []bool{false, true} {
				extra := "        store: " + url + "\n"
				if vpc {
					extra += "        vpcAccess:\n          network: shared\n          subnetwork: shared-europe-west1\n"
				}
				err := loadErr(withConsumer(extra))
				wantRefused := privateIPv4(a) && !vpc
				switch {
				case wantRefused && err == nil:
					t.Errorf("%s without vpcAccess accepted; the consumer could not reach it", url)
				case wantRefused && !strings.Contains(err.Error(), "eventpipe:pipelines.orders.consumer.vpcAccess") ||
					wantRefused && !strings.Contains(err.Error(), "vpcAccess.network and .subnetwork"):
					t.Errorf("%s: error does not name the keys to set: %v", url, err)
				case !wantRefused && err != nil:
					t.Errorf("%s (vpc %v) refused: %v", url, vpc, err)
				}
			}
		}
	}
}

// TestSecretPrivateStoreRefusedAtPreview: a store URL the program only
// gets as a secret output is checked once known, before anything is
// created.
func TestSecretPrivateStoreRefusedAtPreview(t *testing.T) {
	for _, vpc := range []bool{false, true} {
		err, _ := runErr(func(ctx *pulumi.Context) error {
			args := minimalArgs()
			args.Consumer.StoreSecret = pulumi.ToSecret(pulumi.String("postgres://app:pw@10.0.0.5/orders")).(pulumi.StringOutput)
			if vpc {
				args.Consumer.VPCAccess = &spec.VPCAccess{Network: "shared"}
			}
			_, err := components.NewPipeline(ctx, "orders", args)
			return err
		})
		switch {
		case !vpc && (err == nil || !strings.Contains(err.Error(), "consumer.vpcAccess")):
			t.Errorf("secret store on 10.0.0.5 without vpcAccess: err = %v, want one naming consumer.vpcAccess", err)
		case !vpc && strings.Contains(err.Error(), "pw"):
			t.Errorf("error shows the secret URL: %v", err)
		case vpc && err != nil:
			t.Errorf("with vpcAccess: %v", err)
		}
	}
}

func TestVPCAccessRenders(t *testing.T) {
	plan := declareStack(t, withConsumer(`        store: postgres://app@10.0.0.5/orders
        vpcAccess:
          network: projects/acme-net/global/networks/shared
          subnetwork: projects/acme-net/regions/europe-west1/subnetworks/run
          tags: [eventpipe, db-client]
`))
	svc := one(t, plan, tService, "orders")
	want := map[string]any{
		"egress": spec.EgressPrivateRanges,
		"networkInterfaces": []any{map[string]any{
			"network":    "projects/acme-net/global/networks/shared",
			"subnetwork": "projects/acme-net/regions/europe-west1/subnetworks/run",
			"tags":       []any{"eventpipe", "db-client"},
		}},
	}
	if got := input(svc, "template.vpcAccess"); !equalJSON(got, want) {
		t.Errorf("vpcAccess = %v, want %v", got, want)
	}
	if _, ok := custom(plan, tAPI)["api-compute"]; !ok {
		t.Errorf("Direct VPC egress needs the Compute Engine API; APIs = %v", keys(custom(plan, tAPI)))
	}
}

func TestVPCAccessValidation(t *testing.T) {
	tests := []struct{ vpc, wantPath string }{
		{"          network: Shared\n", "vpcAccess.network"},
		{"          subnetwork: run\n", "vpcAccess.network"},
		{"          network: shared\n          egress: all\n", "vpcAccess.egress"},
		{"          network: shared\n          tags: [Bad_Tag]\n", "vpcAccess.tags[0]"},
		{"          network: shared\n          subnetwork: projects/p/global/networks/x\n", "vpcAccess.subnetwork"},
	}
	for _, tc := range tests {
		err := loadErr(withConsumer("        vpcAccess:\n" + tc.vpc))
		if err == nil || !strings.Contains(err.Error(), "consumer."+tc.wantPath) {
			t.Errorf("vpcAccess\n%s: err = %v, want one on %s", tc.vpc, err, tc.wantPath)
		}
	}
	plan := declareStack(t, withConsumer("        vpcAccess:\n          network: shared\n          egress: ALL_TRAFFIC\n"))
	if got := input(one(t, plan, tService, "orders"), "template.vpcAccess.egress"); got != spec.EgressAllTraffic {
		t.Errorf("egress = %v, want ALL_TRAFFIC", got)
	}
}

// TestCloudSQL: a store on a Cloud SQL socket gets the volume mounted at
// /cloudsql, roles/cloudsql.client on each instance's project, and the
// service waits for the grants; a socket whose instance is not listed is
// refused.
func TestCloudSQL(t *testing.T) {
	plan := declareStack(t, withConsumer(`        store: postgres://app@/orders?host=/cloudsql/acme-dev:europe-west1:orders
        cloudSqlInstances: [acme-dev:europe-west1:orders, acme-data:europe-west1:replica]
`))
	svc := one(t, plan, tService, "orders")
	wantVolume := []any{map[string]any{"name": "cloudsql", "cloudSqlInstance": map[string]any{
		"instances": []any{"acme-dev:europe-west1:orders", "acme-data:europe-west1:replica"}}}}
	if got := input(svc, "template.volumes"); !equalJSON(got, wantVolume) {
		t.Errorf("volumes = %v, want %v", got, wantVolume)
	}
	wantMount := []any{map[string]any{"name": "cloudsql", "mountPath": "/cloudsql"}}
	if got := input(svc, "template.containers.0.volumeMounts"); !equalJSON(got, wantMount) {
		t.Errorf("consumer volume mounts = %v, want %v", got, wantMount)
	}
	grants := custom(plan, tProjectIAM)
	for name, project := range map[string]string{"orders-run-cloudsql-client": "acme-dev", "orders-run-cloudsql-client-acme-data": "acme-data"} {
		g, ok := grants[name]
		if !ok {
			t.Fatalf("no grant %s; have %v", name, keys(grants))
		}
		if input(g, "role") != components.RoleCloudSQLClient || input(g, "project") != project || input(g, "member") != "serviceAccount:"+consumerEmail {
			t.Errorf("grant %s = %v", name, g.Inputs)
		}
		if !waitsFor(plan, svc, g.URN) {
			t.Errorf("service does not wait for %s: %v", name, svc.Dependencies)
		}
	}
	if _, ok := custom(plan, tAPI)["api-sqladmin"]; !ok {
		t.Errorf("Cloud SQL connections need the Cloud SQL Admin API; APIs = %v", keys(custom(plan, tAPI)))
	}

	err := loadErr(withConsumer("        store: postgres://app@/orders?host=/cloudsql/acme-dev:europe-west1:orders\n"))
	if err == nil || !strings.Contains(err.Error(), "consumer.cloudSqlInstances") || !strings.Contains(err.Error(), `"acme-dev:europe-west1:orders"`) {
		t.Errorf("unlisted Cloud SQL instance: err = %v, want one naming cloudSqlInstances and the instance", err)
	}
	for _, bad := range []string{"orders", "acme-dev:orders", "acme-dev:Europe:orders", "acme-dev:europe-west1:Orders"} {
		if err := loadErr(withConsumer("        cloudSqlInstances: [" + bad + "]\n")); err == nil || !strings.Contains(err.Error(), "cloudSqlInstances[0]") {
			t.Errorf("instance %q: err = %v, want one on cloudSqlInstances[0]", bad, err)
		}
	}
}

// TestPerInstanceStoresRefused: bbolt and mem stores are refused for
// Cloud Run, in stack config and in component arguments, naming the
// stores to use.
func TestPerInstanceStoresRefused(t *testing.T) {
	for _, store := range []string{"bbolt:///var/lib/eventpipe.db", "mem://"} {
		err := loadErr(withConsumer("        store: " + store + "\n"))
		if err == nil || !strings.Contains(err.Error(), "consumer.store") || !strings.Contains(err.Error(), "firestore://PROJECT/DATABASE or postgres://") {
			t.Errorf("stack store %s: err = %v, want a refusal naming the store to use", store, err)
		}
		err, registered := runErr(func(ctx *pulumi.Context) error {
			args := minimalArgs()
			args.Consumer.Store = store
			_, err := components.NewPipeline(ctx, "orders", args)
			return err
		})
		var errs spec.Errors
		if !errors.As(err, &errs) || errs[0].Path != "consumer.store" {
			t.Errorf("component store %s: err = %v, want one on consumer.store", store, err)
		}
		if len(registered) > 0 {
			t.Errorf("component store %s: %d resources registered before the refusal", store, len(registered))
		}
	}
}

// TestCollectorSidecar: the collector's cpuIdle follows the consumer's
// (explicit, as the provider requires with limits), and the instance's
// totals are checked against Cloud Run's limits.
func TestCollectorSidecar(t *testing.T) {
	traced := strings.Replace(baseStack, "  eventpipe:pipelines:\n", "  eventpipe:defaults:\n    traceCollector: true\n  eventpipe:pipelines:\n", 1)
	pushOnly := strings.Replace(traced, "        work:\n          delivery: pull\n          exactlyOnce: true\n", "", 1)
	for doc, idle := range map[string]bool{traced: false, pushOnly: true} {
		svc := one(t, declareStack(t, doc), tService, "orders")
		for i := range 2 {
			if got := input(svc, fmt.Sprintf("template.containers.%d.resources.cpuIdle", i)); got != idle {
				t.Errorf("container %d cpuIdle = %v, want %v", i, got, idle)
			}
		}
	}
	err := loadErr(strings.Replace(traced, "        minInstances: 1\n", "        minInstances: 1\n        cpu: \"8\"\n        memory: 32Gi\n", 1))
	if err == nil || !strings.Contains(err.Error(), "consumer.cpu") || !strings.Contains(err.Error(), spec.CollectorContainer) {
		t.Errorf("8 CPU / 32Gi consumer with the collector: err = %v, want one on consumer.cpu naming the collector", err)
	}
}

func TestStoreSecretVersionsAreKept(t *testing.T) {
	plan := runMocked(t, func(ctx *pulumi.Context) error {
		args := minimalArgs()
		args.Consumer.StoreSecret = pulumi.ToSecret(pulumi.String("postgres://app:pw@db.example.com/orders")).(pulumi.StringOutput)
		_, err := components.NewPipeline(ctx, "orders", args)
		return err
	})
	v := one(t, plan, tSecretVer, "orders-store")
	if got := input(v, "deletionPolicy"); got != "ABANDON" {
		t.Errorf("secret version deletionPolicy = %v, want ABANDON so a rollback still finds the old version", got)
	}
}

// TestPullConsumerWaitsForItsSubscriptions: the service of a pulling
// consumer is created after every subscription it pulls and its subscriber
// grant on each (a first pull of a missing or unreadable subscription
// fails the revision); push subscriptions still follow the service.
func TestPullConsumerWaitsForItsSubscriptions(t *testing.T) {
	doc := strings.Replace(baseStack, "      subscriptions:\n", "      subscriptions:\n        audit:\n          delivery: pull\n", 1)
	plan := declareStack(t, doc)
	svc := one(t, plan, tService, "orders")
	for _, dep := range []struct{ typ, name string }{
		{tSub, "orders-work"}, {tSubIAM, "orders-work-consumer-subscriber"},
		{tSub, "orders-audit"}, {tSubIAM, "orders-audit-consumer-subscriber"},
	} {
		if urn := one(t, plan, dep.typ, dep.name).URN; !waitsFor(plan, svc, urn) {
			t.Errorf("consumer service does not wait for %s; depends on %v", dep.name, svc.Dependencies)
		}
	}
	push := one(t, plan, tSub, "orders-main")
	if waitsFor(plan, svc, push.URN) {
		t.Error("the service waits for the push subscription, which needs the service's URL: a cycle")
	}
}

// TestCallbackWays: the two supported ways for Cloud Run jobs to call
// back render what each needs. Internal ingress (jobs send through a VPC):
// the service stays internal-only. Ingress all (jobs without VPC egress):
// the service takes requests from anywhere, and only the push and
// callback accounts may invoke it, their tokens checked again by the
// consumer for the audience. Ingress all without callback accounts is
// refused.
func TestCallbackWays(t *testing.T) {
	const job = "reindex@acme-dev.iam.gserviceaccount.com"
	for ingress, want := range map[string]string{"": "INGRESS_TRAFFIC_INTERNAL_ONLY", "ingress: all\n": "INGRESS_TRAFFIC_ALL"} {
		extra := "        callbackAccounts: [" + job + "]\n        callbackAudience: https://orders.acme.example/callback\n"
		if ingress != "" {
			extra += "        " + ingress
		}
		plan := declareStack(t, withConsumer(extra))
		svc := one(t, plan, tService, "orders")
		if got := input(svc, "ingress"); got != want {
			t.Errorf("ingress %q renders %v, want %s", ingress, got, want)
		}
		invokers := map[string]bool{}
		for _, g := range custom(plan, tServiceIAM) {
			if input(g, "role") == components.RoleRunInvoker {
				invokers[fmt.Sprint(input(g, "member"))] = true
			}
		}
		wantInvokers := map[string]bool{"serviceAccount:" + job: true, "serviceAccount:" + pushEmail: true}
		if !equalJSON(invokers, wantInvokers) {
			t.Errorf("ingress %q: invokers = %v, want exactly the push and callback accounts %v", ingress, invokers, wantInvokers)
		}
		e := env(t, svc)
		if e[settings.CallbackAccounts] != job || e[settings.CallbackAudience] != "https://orders.acme.example/callback" {
			t.Errorf("ingress %q: the consumer does not check callback tokens: %v", ingress, e)
		}
		if !slices.Contains(input(svc, "customAudiences").([]any), any("https://orders.acme.example/callback")) {
			t.Errorf("ingress %q: callback audience not a custom audience: %v", ingress, input(svc, "customAudiences"))
		}
	}
	err := loadErr(withConsumer("        ingress: all\n"))
	if err == nil || !strings.Contains(err.Error(), "consumer.ingress") || !strings.Contains(err.Error(), "callbackAccounts") {
		t.Errorf("ingress all without callback accounts: err = %v, want a refusal naming callbackAccounts", err)
	}
}
