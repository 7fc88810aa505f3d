package fsstore_test

import (
	"context"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/eventpipe/eventpipe/consumer/store/fsstore"
	"github.com/eventpipe/eventpipe/internal/testing/doortest"
	"github.com/eventpipe/eventpipe/internal/testing/fsemulator"
	"github.com/eventpipe/eventpipe/internal/testing/storetest"
)

func TestConformance(t *testing.T) {
	em := fsemulator.Start(t)
	s, err := fsstore.Open(context.Background(), "eventpipe-test", "")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	t.Logf("Firestore at %s (external: %v)", em.Host, em.External)
	storetest.Run(t, storetest.Harness{Store: s, NoIsolation: em.IsolationReason(), NoFullInt64: em.Int64Reason(),
		SetMerges: em.SetMergeReason()})
}

func TestCodeName(t *testing.T) {
	for c, want := range map[codes.Code]string{
		codes.Unavailable: "UNAVAILABLE", codes.DeadlineExceeded: "DEADLINE_EXCEEDED", codes.Canceled: "CANCELLED",
		codes.AlreadyExists: "ALREADY_EXISTS", codes.PermissionDenied: "PERMISSION_DENIED", codes.OK: "OK",
	} {
		if got := fsstore.CodeName(c); got != want {
			t.Errorf("CodeName(%v) = %q, want %q", c, got, want)
		}
	}
}

// TestDoors runs the door invariant suite on the Firestore emulator: on
// the npm one, without isolation, the cases that deliver concurrently are
// skipped with its reason.
func TestDoors(t *testing.T) {
	em := fsemulator.Start(t)
	s, err := fsstore.Open(context.Background(), "eventpipe-doors", "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() }) // after the doors, which run in parallel
	doortest.Run(t, doortest.Harness{Store: s, NoIsolation: em.IsolationReason(), NoFullInt64: em.Int64Reason()})
}
