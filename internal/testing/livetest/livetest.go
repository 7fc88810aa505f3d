// Package livetest runs Google's in-process Pub/Sub fake (pstest) with Google's IAM policy
// service beside it (the in-memory google.iam.v1.IAMPolicy server of gapic-showcase,
// Google's reference server for its client generators), on one gRPC address as the real
// Pub/Sub endpoint serves both, and builds topologies on it through the real admin
// clients, for the audit's tests. ResourceManager is a fake of the two Cloud Resource
// Manager calls the audit makes, written here: no Google fake of that API exists.
package livetest

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"cloud.google.com/go/iam/apiv1/iampb"
	pubsubapi "cloud.google.com/go/pubsub/v2/apiv1"
	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"github.com/googleapis/gapic-showcase/server/services"
	crm "google.golang.org/api/cloudresourcemanager/v1"
	"google.golang.org/api/option"
	"google.golang.org/grpc"

	"github.com/eventpipe/eventpipe/internal/localpubsub"
)

// Server is a running fake with admin clients connected to it.
type Server struct {
	// Addr is the host:port to set as PUBSUB_EMULATOR_HOST.
	Addr          string
	Topics        *pubsubapi.TopicAdminClient
	Subscriptions *pubsubapi.SubscriptionAdminClient
}

// Start starts a fake for the test; it stops when the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	ctx := context.Background()
	fake, err := localpubsub.StartWith(ctx, "audit", func(s *grpc.Server) {
		iampb.RegisterIAMPolicyServer(s, services.NewIAMPolicyServer())
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fake.Close() })
	return &Server{Addr: fake.Server.Addr, Topics: fake.Client.TopicAdminClient, Subscriptions: fake.Client.SubscriptionAdminClient}
}

// Topic creates a topic and sets its IAM policy (every real resource has one, if empty).
func (s *Server) Topic(t testing.TB, name string, labels map[string]string, bindings ...*iampb.Binding) {
	t.Helper()
	ctx := context.Background()
	if _, err := s.Topics.CreateTopic(ctx, &pubsubpb.Topic{Name: name, Labels: labels}); err != nil {
		t.Fatalf("create topic %s: %v", name, err)
	}
	s.Policy(t, name, bindings...)
}

// Subscription creates a subscription and sets its IAM policy.
func (s *Server) Subscription(t testing.TB, sub *pubsubpb.Subscription, bindings ...*iampb.Binding) {
	t.Helper()
	if _, err := s.Subscriptions.CreateSubscription(context.Background(), sub); err != nil {
		t.Fatalf("create subscription %s: %v", sub.GetName(), err)
	}
	s.Policy(t, sub.GetName(), bindings...)
}

// Policy sets the IAM policy of a resource through the Pub/Sub client's IAM call.
func (s *Server) Policy(t testing.TB, resource string, bindings ...*iampb.Binding) {
	t.Helper()
	if _, err := s.Topics.SetIamPolicy(context.Background(), &iampb.SetIamPolicyRequest{
		Resource: resource, Policy: &iampb.Policy{Bindings: bindings},
	}); err != nil {
		t.Fatalf("set IAM policy of %s: %v", resource, err)
	}
}

// Grant is a binding of role to members.
func Grant(role string, members ...string) *iampb.Binding {
	return &iampb.Binding{Role: role, Members: members}
}

// Project is what the Resource Manager fake says of one project.
type Project struct {
	Number string
	Policy *crm.Policy
}

// ResourceManager serves the two Cloud Resource Manager v1 calls the audit makes
// (projects.get and projects.getIamPolicy) for projects, over HTTP on loopback, and
// returns a client of Google's REST library connected to it. It stops when the test ends.
func ResourceManager(t testing.TB, projects map[string]Project) *crm.Service {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/projects/{id}", func(w http.ResponseWriter, r *http.Request) {
		p, ok := projects[r.PathValue("id")]
		if !ok {
			http.Error(w, `{"error":{"code":404,"message":"not found","status":"NOT_FOUND"}}`, http.StatusNotFound)
			return
		}
		n, _ := strconv.ParseInt(p.Number, 10, 64)
		writeJSON(w, &crm.Project{ProjectId: r.PathValue("id"), ProjectNumber: n, LifecycleState: "ACTIVE"})
	})
	mux.HandleFunc("POST /v1/projects/{call}", func(w http.ResponseWriter, r *http.Request) {
		id, ok := strings.CutSuffix(r.PathValue("call"), ":getIamPolicy")
		p, known := projects[id]
		if !ok || !known {
			http.Error(w, `{"error":{"code":404,"message":"not found","status":"NOT_FOUND"}}`, http.StatusNotFound)
			return
		}
		pol := p.Policy
		if pol == nil {
			pol = &crm.Policy{}
		}
		writeJSON(w, pol)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	svc, err := crm.NewService(context.Background(), option.WithEndpoint(srv.URL+"/"), option.WithoutAuthentication(), option.WithHTTPClient(srv.Client()))
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}
