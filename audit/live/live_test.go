package live

import (
	"context"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	firestoreadmin "cloud.google.com/go/firestore/apiv1/admin"
	"cloud.google.com/go/firestore/apiv1/admin/adminpb"
	"cloud.google.com/go/iam/apiv1/iampb"
	monitoring "cloud.google.com/go/monitoring/apiv3/v2"
	"cloud.google.com/go/monitoring/apiv3/v2/monitoringpb"
	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	run "cloud.google.com/go/run/apiv2"
	"cloud.google.com/go/run/apiv2/runpb"
	crm "google.golang.org/api/cloudresourcemanager/v1"
	"google.golang.org/api/option"
	"google.golang.org/genproto/googleapis/api/monitoredres"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/eventpipe/eventpipe/audit/inventory"
	"github.com/eventpipe/eventpipe/internal/localpubsub"
	"github.com/eventpipe/eventpipe/internal/testing/livetest"
)

const agent = "serviceAccount:service-42@gcp-sa-pubsub.iam.gserviceaccount.com"

// pubsubClients connects Pub/Sub clients to srv (what Dial does with PUBSUB_EMULATOR_HOST).
func pubsubClients(t *testing.T, addr string) *Clients {
	t.Helper()
	t.Setenv(EmulatorEnv, addr)
	c, err := Dial(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// TestReadPubSub reads two projects from pstest with Google's IAM policy service beside it.
func TestReadPubSub(t *testing.T) {
	srv := livetest.Start(t)
	srv.Topic(t, "projects/a/topics/orders", map[string]string{"team": "x"})
	srv.Topic(t, "projects/a/topics/orders.dlq", nil, livetest.Grant("roles/pubsub.publisher", agent))
	srv.Subscription(t, &pubsubpb.Subscription{Name: "projects/a/subscriptions/orders-sub", Topic: "projects/a/topics/orders", AckDeadlineSeconds: 30,
		DeadLetterPolicy: &pubsubpb.DeadLetterPolicy{DeadLetterTopic: "projects/a/topics/orders.dlq", MaxDeliveryAttempts: 7}},
		livetest.Grant("roles/pubsub.subscriber", agent))
	srv.Topic(t, "projects/b/topics/other", nil)
	c := pubsubClients(t, srv.Addr)
	c.Projects = livetest.ResourceManager(t, map[string]livetest.Project{
		"a": {Number: "42", Policy: &crm.Policy{Bindings: []*crm.Binding{{Role: "roles/pubsub.publisher", Members: []string{agent}}}}},
	})
	inv, err := Read(context.Background(), c, Options{Projects: []string{"b", "a"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(inv.Projects) != 2 || inv.Projects[0].ID != "a" {
		t.Fatalf("projects %v", inv.Projects)
	}
	a := inv.Projects[0]
	if len(a.Topics) != 2 || len(a.Subscriptions) != 1 || a.Subscriptions[0].GetDeadLetterPolicy().GetMaxDeliveryAttempts() != 7 {
		t.Fatalf("project a: %v %v", a.Topics, a.Subscriptions)
	}
	if pol := a.Policies["projects/a/topics/orders.dlq"]; len(pol.GetBindings()) != 1 || pol.GetBindings()[0].GetMembers()[0] != agent {
		t.Fatalf("DLQ topic policy %v", pol)
	}
	if pol := a.Policies["projects/a/subscriptions/orders-sub"]; pol.GetBindings()[0].GetRole() != "roles/pubsub.subscriber" {
		t.Fatalf("subscription policy %v", pol)
	}
	if a.Number != "42" || a.Policies["projects/a"].GetBindings()[0].GetRole() != "roles/pubsub.publisher" {
		t.Fatalf("project number %q, policy %v", a.Number, a.Policies["projects/a"])
	}
	// Against the emulator, what it does not serve is a gap, named as such.
	if !a.HasGap(inventory.GapAlertPolicies, "") || a.AlertPoliciesRead {
		t.Fatalf("alert policies read %v, gaps %v", a.AlertPoliciesRead, a.Gaps)
	}
	for _, g := range a.Gaps {
		if !strings.Contains(g.Reason, EmulatorEnv) {
			t.Errorf("gap %+v does not say the emulator is why", g)
		}
	}
	// Project b is unknown to the Resource Manager: its number and policy are gaps.
	b := inv.Projects[1]
	if !b.HasGap(inventory.GapProjectNumber, "projects/b") || !b.HasGap(inventory.GapPolicy, "projects/b") {
		t.Fatalf("project b gaps %v", b.Gaps)
	}
}

// TestReadWithoutIAMService reads from pstest alone, which does not serve the IAM policy
// service: every policy is a gap, and the read still succeeds.
func TestReadWithoutIAMService(t *testing.T) {
	fake, err := localpubsub.Start(context.Background(), "a")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fake.Close() })
	if _, err := fake.Client.TopicAdminClient.CreateTopic(context.Background(), &pubsubpb.Topic{Name: "projects/a/topics/t"}); err != nil {
		t.Fatal(err)
	}
	inv, err := Read(context.Background(), pubsubClients(t, fake.Server.Addr), Options{Projects: []string{"a"}})
	if err != nil {
		t.Fatal(err)
	}
	p := inv.Projects[0]
	if len(p.Policies) != 0 || !p.HasGap(inventory.GapPolicy, "projects/a/topics/t") {
		t.Fatalf("policies %v, gaps %v", p.Policies, p.Gaps)
	}
}

func TestReadFailsWhenTopicsCannotBeListed(t *testing.T) {
	srv := livetest.Start(t)
	c := pubsubClients(t, srv.Addr)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Read(ctx, c, Options{Projects: []string{"a"}}); err == nil || !strings.Contains(err.Error(), "project a: listing topics") {
		t.Fatalf("error %v", err)
	}
	if _, err := Read(context.Background(), c, Options{}); err == nil || !strings.Contains(err.Error(), "--project") {
		t.Fatalf("error %v without projects", err)
	}
}

// googleFakes serves, on one loopback gRPC server, the calls the audit makes to Cloud
// Run, Cloud Monitoring and the Firestore Admin API: fakes written here (Google ships none),
// to test the requests the reader sends and what it makes of the answers.
type googleFakes struct {
	runpb.UnimplementedServicesServer
	monitoringpb.UnimplementedAlertPolicyServiceServer
	monitoringpb.UnimplementedMetricServiceServer
	adminpb.UnimplementedFirestoreAdminServer

	mu       sync.Mutex
	requests []string
	services []*runpb.Service
	policies map[string]*iampb.Policy
	alerts   []*monitoringpb.AlertPolicy
	series   []*monitoringpb.TimeSeries
	fields   []*adminpb.Field
	denied   map[string]bool // method → PermissionDenied
}

func (f *googleFakes) record(method, req string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests = append(f.requests, method+" "+req)
	if f.denied[method] {
		return status.Error(codes.PermissionDenied, "the caller lacks permission")
	}
	return nil
}

func (f *googleFakes) ListServices(_ context.Context, r *runpb.ListServicesRequest) (*runpb.ListServicesResponse, error) {
	if err := f.record("ListServices", r.GetParent()); err != nil {
		return nil, err
	}
	return &runpb.ListServicesResponse{Services: f.services}, nil
}

func (f *googleFakes) GetIamPolicy(_ context.Context, r *iampb.GetIamPolicyRequest) (*iampb.Policy, error) {
	if err := f.record("GetIamPolicy", r.GetResource()); err != nil {
		return nil, err
	}
	return f.policies[r.GetResource()], nil
}

func (f *googleFakes) ListAlertPolicies(_ context.Context, r *monitoringpb.ListAlertPoliciesRequest) (*monitoringpb.ListAlertPoliciesResponse, error) {
	if err := f.record("ListAlertPolicies", r.GetName()); err != nil {
		return nil, err
	}
	return &monitoringpb.ListAlertPoliciesResponse{AlertPolicies: f.alerts}, nil
}

func (f *googleFakes) ListTimeSeries(_ context.Context, r *monitoringpb.ListTimeSeriesRequest) (*monitoringpb.ListTimeSeriesResponse, error) {
	if err := f.record("ListTimeSeries", r.GetName()+" "+r.GetFilter()); err != nil {
		return nil, err
	}
	return &monitoringpb.ListTimeSeriesResponse{TimeSeries: f.series}, nil
}

func (f *googleFakes) ListFields(_ context.Context, r *adminpb.ListFieldsRequest) (*adminpb.ListFieldsResponse, error) {
	if err := f.record("ListFields", r.GetParent()+" "+r.GetFilter()); err != nil {
		return nil, err
	}
	return &adminpb.ListFieldsResponse{Fields: f.fields}, nil
}

// serve starts f and sets the Cloud Run, Monitoring and Firestore clients of c to it.
func (f *googleFakes) serve(t *testing.T, c *Clients) {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer()
	runpb.RegisterServicesServer(s, f)
	monitoringpb.RegisterAlertPolicyServiceServer(s, f)
	monitoringpb.RegisterMetricServiceServer(s, f)
	adminpb.RegisterFirestoreAdminServer(s, f)
	go func() { _ = s.Serve(lis) }()
	t.Cleanup(s.Stop)
	opts := []option.ClientOption{option.WithEndpoint(lis.Addr().String()), option.WithoutAuthentication(),
		option.WithGRPCDialOption(grpc.WithTransportCredentials(insecure.NewCredentials()))}
	ctx := context.Background()
	if c.Services, err = run.NewServicesClient(ctx, opts...); err != nil {
		t.Fatal(err)
	}
	if c.AlertPolicies, err = monitoring.NewAlertPolicyClient(ctx, opts...); err != nil {
		t.Fatal(err)
	}
	if c.Metrics, err = monitoring.NewMetricClient(ctx, opts...); err != nil {
		t.Fatal(err)
	}
	if c.Firestore, err = firestoreadmin.NewFirestoreAdminClient(ctx, opts...); err != nil {
		t.Fatal(err)
	}
}

// pushing builds a project whose subscriptions push to two Cloud Run hosts.
func pushing(t *testing.T) *livetest.Server {
	srv := livetest.Start(t)
	srv.Topic(t, "projects/a/topics/t", nil)
	for sub, endpoint := range map[string]string{
		"orders":  "https://orders-x-ew.a.run.app/push",
		"billing": "https://billing-y-ew.a.run.app/push?x=1",
		"partner": "https://partner.example.com/hook",
	} {
		srv.Subscription(t, &pubsubpb.Subscription{Name: "projects/a/subscriptions/" + sub, Topic: "projects/a/topics/t", AckDeadlineSeconds: 10,
			PushConfig: &pubsubpb.PushConfig{PushEndpoint: endpoint}})
	}
	return srv
}

func TestReadServicesAlertsTTLAndBacklog(t *testing.T) {
	srv := pushing(t)
	c := pubsubClients(t, srv.Addr)
	orders := &runpb.Service{Name: "projects/a/locations/europe-west1/services/orders", Uri: "https://orders-x-ew.a.run.app",
		Template: &runpb.RevisionTemplate{Containers: []*runpb.Container{{Env: []*runpb.EnvVar{
			{Name: "EVENTPIPE_STORE", Values: &runpb.EnvVar_Value{Value: "firestore://a/events"}}}}}}}
	unrelated := &runpb.Service{Name: "projects/a/locations/europe-west1/services/web", Uri: "https://web-z-ew.a.run.app"}
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	f := &googleFakes{
		services: []*runpb.Service{orders, unrelated},
		policies: map[string]*iampb.Policy{orders.GetName(): {Bindings: []*iampb.Binding{{Role: "roles/run.invoker", Members: []string{"allUsers"}}}}},
		alerts:   []*monitoringpb.AlertPolicy{{Name: "projects/a/alertPolicies/1", DisplayName: "backlog"}},
		series: []*monitoringpb.TimeSeries{
			{Resource: &monitoredres.MonitoredResource{Labels: map[string]string{"subscription_id": "orders"}}, Points: []*monitoringpb.Point{
				{Value: &monitoringpb.TypedValue{Value: &monitoringpb.TypedValue_Int64Value{Int64Value: 30}}},
				{Value: &monitoringpb.TypedValue{Value: &monitoringpb.TypedValue_Int64Value{Int64Value: 7200}}}}},
		},
		fields: []*adminpb.Field{{Name: "projects/a/databases/events/collectionGroups/eventpipe_dedupe/fields/expireAt", TtlConfig: &adminpb.Field_TtlConfig{}}},
	}
	f.serve(t, c)
	inv, err := Read(context.Background(), c, Options{Projects: []string{"a"}, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	p := inv.Projects[0]
	if len(p.Services) != 1 || p.Services[0].GetName() != orders.GetName() {
		t.Fatalf("services %v: only the one a subscription pushes to is kept", p.Services)
	}
	if pol := p.Policies[orders.GetName()]; pol.GetBindings()[0].GetMembers()[0] != "allUsers" {
		t.Fatalf("service policy %v", pol)
	}
	// billing-y-ew.a.run.app is answered by no service of the project; partner.example.com
	// is not Cloud Run.
	if !p.HasGap(inventory.GapService, "billing-y-ew.a.run.app") || p.HasGap(inventory.GapService, "partner.example.com") {
		t.Fatalf("gaps %v", p.Gaps)
	}
	if !p.AlertPoliciesRead || len(p.AlertPolicies) != 1 || !p.TTLFieldsRead || len(p.TTLFields) != 1 {
		t.Fatalf("alerts %v (%d), TTL %v (%d)", p.AlertPoliciesRead, len(p.AlertPolicies), p.TTLFieldsRead, len(p.TTLFields))
	}
	if got := p.Backlog["projects/a/subscriptions/orders"]; got != 2*time.Hour {
		t.Fatalf("backlog %v, want the largest point, 2h", got)
	}
	want := map[string]bool{
		"ListServices projects/a/locations/-": true,
		"GetIamPolicy " + orders.GetName():    true,
		"ListAlertPolicies projects/a":        true,
		`ListTimeSeries projects/a metric.type = "pubsub.googleapis.com/subscription/oldest_unacked_message_age" AND resource.type = "pubsub_subscription"`: true,
		"ListFields projects/a/databases/events/collectionGroups/- ttlConfig:*":                                                                             true,
	}
	for _, r := range f.requests {
		if !want[r] {
			t.Errorf("unexpected request %q", r)
		}
		delete(want, r)
	}
	for r := range want {
		t.Errorf("request %q not made", r)
	}
}

func TestReadRecordsDeniedReadsAsGaps(t *testing.T) {
	srv := pushing(t)
	c := pubsubClients(t, srv.Addr)
	f := &googleFakes{denied: map[string]bool{"ListServices": true, "ListAlertPolicies": true, "ListTimeSeries": true}}
	f.serve(t, c)
	inv, err := Read(context.Background(), c, Options{Projects: []string{"a"}})
	if err != nil {
		t.Fatal(err)
	}
	p := inv.Projects[0]
	for _, g := range []inventory.GapKind{inventory.GapService, inventory.GapAlertPolicies, inventory.GapBacklog} {
		if !p.HasGap(g, "") {
			t.Errorf("no %s gap: %v", g, p.Gaps)
		}
	}
	for _, g := range p.Gaps {
		if g.Kind == inventory.GapAlertPolicies && !strings.Contains(g.Reason, "roles/monitoring.viewer") {
			t.Errorf("gap %q does not name the role to grant", g.Reason)
		}
	}
	if p.AlertPoliciesRead || p.Backlog != nil {
		t.Fatalf("alerts read %v, backlog %v", p.AlertPoliciesRead, p.Backlog)
	}
}

func TestBacklogRequest(t *testing.T) {
	end := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	r := BacklogRequest("a", end.Add(-10*time.Minute), end)
	if r.GetAggregation().GetAlignmentPeriod().AsDuration() != 10*time.Minute ||
		r.GetAggregation().GetPerSeriesAligner() != monitoringpb.Aggregation_ALIGN_MAX ||
		!r.GetInterval().GetEndTime().AsTime().Equal(end) || r.GetName() != "projects/a" {
		t.Fatalf("request %v", r)
	}
}
