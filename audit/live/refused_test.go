package live

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"google.golang.org/api/googleapi"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/eventpipe/eventpipe/audit/inventory"
	"github.com/eventpipe/eventpipe/internal/localpubsub"
)

// TestReadFromAnEmulatorWithoutIAM is the example that misled: the Pub/Sub emulator
// serves no IAM policy service, and the gap said the auditing identity lacked
// roles/iam.securityReviewer. It now says what the endpoint answered, and no role.
func TestReadFromAnEmulatorWithoutIAM(t *testing.T) {
	ctx := context.Background()
	fake, err := localpubsub.Start(ctx, "dev")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fake.Close() })
	if _, err := fake.Client.TopicAdminClient.CreateTopic(ctx, &pubsubpb.Topic{Name: "projects/dev/topics/orders"}); err != nil {
		t.Fatal(err)
	}
	inv, err := Read(ctx, pubsubClients(t, fake.Server.Addr), Options{Projects: []string{"dev"}})
	if err != nil {
		t.Fatal(err)
	}
	var reason string
	for _, g := range inv.Projects[0].Gaps {
		if g.Kind == inventory.GapPolicy && g.Resource == "projects/dev/topics/orders" {
			reason = g.Reason
		}
	}
	if !strings.Contains(reason, "Unimplemented: unknown service google.iam.v1.IAMPolicy") ||
		!strings.Contains(reason, "does not serve this API") || strings.Contains(reason, "roles/") {
		t.Fatalf("gap reason %q: want the endpoint's answer and no role", reason)
	}
}

// TestRefusalNamesTheRoleOnlyWhenARoleHelps: for every gRPC code and HTTP error status an
// API may answer with, the line holds the answer (its code and message) and names the
// permission and role unless the answer says no role helps (an API not served, not
// enabled, credentials refused, or a failure on the API's side), and the cause stays
// reachable with errors.Is.
func TestRefusalNamesTheRoleOnlyWhenARoleHelps(t *testing.T) {
	need := access{Permission: "pubsub.topics.getIamPolicy", Role: "roles/iam.securityReviewer"}
	noRole := map[codes.Code]bool{
		codes.Unimplemented: true, codes.Unauthenticated: true, codes.Unavailable: true,
		codes.DeadlineExceeded: true, codes.ResourceExhausted: true, codes.Internal: true,
	}
	type answerCase struct {
		name     string
		err      error
		code     codes.Code
		contains string
	}
	var cases []answerCase
	for c := codes.Canceled; c <= codes.Unauthenticated; c++ {
		cases = append(cases, answerCase{name: "grpc " + c.String(), err: status.Error(c, "the answer"), code: c, contains: c.String() + ": the answer"})
	}
	for h := 400; h < 600; h++ {
		if http.StatusText(h) == "" {
			continue
		}
		err := fmt.Errorf("calling: %w", &googleapi.Error{Code: h, Message: "the answer"})
		cases = append(cases, answerCase{name: fmt.Sprintf("http %d", h), err: err, code: httpCode(h), contains: fmt.Sprintf("HTTP %d", h)})
	}
	for _, tc := range cases {
		line := refused("reading its IAM policy", need, tc.err).Error()
		namesRole := strings.Contains(line, need.Role) && strings.Contains(line, need.Permission)
		if namesRole == noRole[tc.code] || !strings.Contains(line, tc.contains) || !strings.Contains(line, "the answer") ||
			!strings.HasPrefix(line, "reading its IAM policy: ") {
			t.Errorf("%s: %q", tc.name, line)
		}
		if !errors.Is(refused("x", need, tc.err), tc.err) {
			t.Errorf("%s: the cause is not wrapped", tc.name)
		}
	}

	// An API not enabled answers PermissionDenied, but no role enables it.
	st, err := status.New(codes.PermissionDenied, "Cloud Resource Manager API has not been used in project 42 before or it is disabled").
		WithDetails(&errdetails.ErrorInfo{Reason: "SERVICE_DISABLED", Domain: "googleapis.com"})
	if err != nil {
		t.Fatal(err)
	}
	if line := refused("reading the project", need, st.Err()).Error(); strings.Contains(line, need.Role) || !strings.Contains(line, "not enabled") {
		t.Errorf("disabled API: %q", line)
	}
	// An error that is no API's answer (a cancelled read) is quoted as it is.
	if line := refused("reading the project", need, context.Canceled).Error(); !strings.Contains(line, context.Canceled.Error()) {
		t.Errorf("cancelled: %q", line)
	}
}
