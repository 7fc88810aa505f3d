package engine

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"syscall"

	"github.com/eventpipe/eventpipe/consumer/settings"
)

// Failpoint names a point where a process can crash mid-message: the four
// worker points and three projection points of the operational acceptance
// tests (crash there, redeliver, expect exactly one effect), the point
// after a callback's receipt (or an API request's Idempotency-Key) is
// reserved, and the point after the handler answered a keyed API request,
// before its response is stored.
type Failpoint string

// The failpoints. The engine hits WorkerAfterClaim (in Claim of an
// event, after the commit), WorkerBeforeMarkDone (at the start of Settle of
// an event), ProjectionBeforeWrite and ProjectionAfterWrite (in
// Materialize, around the commit) and CallbackAfterReserve (in Claim of an
// id, a callback's or an API key's, after the commit). Callers hit the rest with Engine.Hit around their own side
// effect and acknowledgement.
const (
	WorkerAfterClaim      Failpoint = "worker-after-claim"
	WorkerBeforeApply     Failpoint = "worker-before-apply"
	WorkerAfterApply      Failpoint = "worker-after-apply"
	WorkerBeforeMarkDone  Failpoint = "worker-before-mark-done"
	ProjectionBeforeWrite Failpoint = "projection-before-write"
	ProjectionAfterWrite  Failpoint = "projection-after-write"
	ProjectionBeforeAck   Failpoint = "projection-before-ack"
	CallbackAfterReserve  Failpoint = "callback-after-reserve"
	GatewayBeforeFinish   Failpoint = "gateway-before-finish"
)

// Failpoints lists every failpoint.
func Failpoints() []Failpoint {
	return []Failpoint{WorkerAfterClaim, WorkerBeforeApply, WorkerAfterApply, WorkerBeforeMarkDone,
		ProjectionBeforeWrite, ProjectionAfterWrite, ProjectionBeforeAck, CallbackAfterReserve, GatewayBeforeFinish}
}

// FailpointHook is called at every failpoint. A non-nil error stops the
// operation there at once, with no clean-up, as a crash would; the engine
// returns the error unchanged. A hook may also end the process (see
// KillAtFailpoints).
type FailpointHook func(ctx context.Context, fp Failpoint) error

// FailpointEnv is the environment variable KillAtFailpoints reads in the
// consumer binary: a comma-separated list of failpoint names.
const FailpointEnv = settings.Failpoint

// KillAtFailpoints returns a hook that kills the current process with
// SIGKILL at any failpoint named in spec (comma-separated, e.g. the value of
// EVENTPIPE_FAILPOINT), or nil when spec is empty. Unknown names are an
// error so that a typo does not silently disable a crash test.
func KillAtFailpoints(spec string) (FailpointHook, error) {
	spec = strings.TrimSpace(spec)
	if spec == "" {
		return nil, nil
	}
	armed := map[Failpoint]bool{}
	for _, name := range strings.Split(spec, ",") {
		fp := Failpoint(strings.TrimSpace(name))
		if !slices.Contains(Failpoints(), fp) {
			return nil, &Error{Type: TypeConfiguration, Op: "parse " + FailpointEnv,
				Err: errors.New("unknown failpoint " + string(fp) + ": use one of " + failpointNames())}
		}
		armed[fp] = true
	}
	return func(_ context.Context, fp Failpoint) error {
		if armed[fp] {
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {} // SIGKILL cannot be caught; wait for it to land.
		}
		return nil
	}, nil
}

func failpointNames() string {
	names := make([]string, 0, len(Failpoints()))
	for _, fp := range Failpoints() {
		names = append(names, string(fp))
	}
	return strings.Join(names, ", ")
}
