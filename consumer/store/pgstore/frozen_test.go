package pgstore_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/eventpipe/eventpipe/consumer/engine"
	"github.com/eventpipe/eventpipe/consumer/store"
	"github.com/eventpipe/eventpipe/consumer/store/pgstore"
	"github.com/eventpipe/eventpipe/internal/testing/pgtest"
)

// holderEnv makes the test binary act as instance A: it opens the store URL
// in the variable's value, delivers the held events, and inside each of
// their transactions (documents locked, writes queued) prints "holding"
// and waits for a line on stdin before committing.
const holderEnv = "EVENTPIPE_PGSTORE_TEST_HOLDER"

func TestMain(m *testing.M) {
	if u := os.Getenv(holderEnv); u != "" {
		if err := holderProcess(u); err != nil {
			fmt.Println("holder:", err)
			os.Exit(2)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// heldDocs is how many documents the frozen instance holds: as many as
// instance B has connections, so B stalls entirely when its waiters may
// take every connection.
const heldDocs = 4

var eventTime = time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)

// delivery is one event for one document of collection "frozen"; events
// whose id starts with "pre-" are a second older than the others.
func delivery(id, doc string) (engine.Event, engine.Write) {
	at := eventTime
	if strings.HasPrefix(id, "pre-") {
		at = at.Add(-time.Second)
	}
	ev := engine.Event{MessageID: "m-" + id, EventID: id, PublishTime: at,
		Payload: []byte(`{"eventId":"` + id + `"}`)}
	return ev, engine.Write{Collection: "frozen", ID: doc, EventTime: at, Fields: map[string]any{"by": id}}
}

func held(i int) (engine.Event, engine.Write) {
	return delivery(fmt.Sprintf("held-%d", i), fmt.Sprintf("held-%d", i))
}

// holdingStore blocks every transaction after its function ran (documents
// locked, writes queued, COMMIT not sent) until release is closed.
type holdingStore struct {
	store.Store
	release chan struct{}
	out     *sync.Mutex
}

func (h *holdingStore) RunTx(ctx context.Context, fn func(ctx context.Context, tx store.Tx) error) error {
	return h.Store.RunTx(ctx, func(ctx context.Context, tx store.Tx) error {
		if err := fn(ctx, tx); err != nil {
			return err
		}
		h.out.Lock()
		fmt.Println("holding")
		h.out.Unlock()
		<-h.release
		return nil
	})
}

func holderProcess(u string) error {
	ctx := context.Background()
	st, err := pgstore.Open(ctx, u)
	if err != nil {
		return err
	}
	defer st.Close()
	var out sync.Mutex
	hs := &holdingStore{Store: st, release: make(chan struct{}), out: &out}
	eng, err := engine.New(engine.Config{Store: hs, Env: "prod"})
	if err != nil {
		return err
	}
	go func() {
		_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
		close(hs.release)
	}()
	var wg sync.WaitGroup
	for i := range heldDocs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ev, w := held(i)
			r, err := eng.Materialize(ctx, ev, w)
			typ, _ := engine.Classify(err)
			out.Lock()
			fmt.Printf("result held-%d %s %s\n", i, r.Outcome, typ)
			out.Unlock()
		}()
	}
	wg.Wait()
	return nil
}

// holder is instance A, a real process.
type holder struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines chan string
	done  chan struct{}
}

func startHolder(t *testing.T, storeURL string) *holder {
	t.Helper()
	h := &holder{cmd: exec.Command(os.Args[0], "-test.run=^$"), lines: make(chan string, 64), done: make(chan struct{})}
	h.cmd.Env = append(os.Environ(), holderEnv+"="+storeURL)
	h.cmd.Stderr = os.Stderr
	var err error
	if h.stdin, err = h.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := h.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := h.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			h.lines <- sc.Text()
		}
		close(h.lines)
	}()
	go func() { _ = h.cmd.Wait(); close(h.done) }()
	t.Cleanup(func() {
		_ = h.cmd.Process.Signal(syscall.SIGCONT)
		_ = h.cmd.Process.Kill()
		<-h.done
	})
	return h
}

// waitStopped waits until the kernel has stopped the process (state T in
// /proc/PID/stat): kill(2) returns before the signal is acted on.
func (h *holder) waitStopped(t *testing.T) {
	t.Helper()
	stat := fmt.Sprintf("/proc/%d/stat", h.cmd.Process.Pid)
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for range 10000 {
		b, err := os.ReadFile(stat)
		if err != nil {
			t.Fatal(err)
		}
		// pid (comm) state ...: the state follows the last ')'.
		if i := strings.LastIndexByte(string(b), ')'); i >= 0 && strings.HasPrefix(string(b[i+1:]), " T") {
			return
		}
		<-tick.C
	}
	t.Fatal("holder not stopped 10s after SIGSTOP")
}

// next returns the holder's next output line.
func (h *holder) next(t *testing.T) string {
	t.Helper()
	select {
	case l, ok := <-h.lines:
		if !ok {
			t.Fatal("holder exited early")
		}
		return l
	case <-time.After(30 * time.Second):
		t.Fatal("holder said nothing for 30s")
	}
	return ""
}

// timed is one delivery on instance B.
type timed struct {
	id      string
	outcome engine.Outcome
	err     error
	took    time.Duration
}

func deliverAll(ctx context.Context, eng *engine.Engine, ids, docs []string) []timed {
	res := make([]timed, len(ids))
	var wg sync.WaitGroup
	for i := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			start := time.Now()
			ev, w := delivery(ids[i], docs[i])
			r, err := eng.Materialize(ctx, ev, w)
			res[i] = timed{id: ids[i], outcome: r.Outcome, err: err, took: time.Since(start)}
		}()
	}
	wg.Wait()
	return res
}

func percentile(ts []timed, p float64) time.Duration {
	d := make([]time.Duration, len(ts))
	for i, x := range ts {
		d[i] = x.took
	}
	slices.Sort(d)
	return d[int(p*float64(len(d)-1))]
}

// TestFrozenHolderDoesNotStallOthers is issue 21's stuck instance: instance
// A (a real process) is frozen with SIGSTOP while its transactions hold
// heldDocs documents, as many as instance B has connections. On B:
//
//   - deliveries for unrelated documents (existing and new) apply promptly,
//     well inside the lock bound: waiters for held documents never take
//     every connection;
//   - redeliveries of A's events fail as transient lock timeouts
//     (SQLSTATE 55P03) within the bound, having written nothing;
//   - once the server ends A's silent sessions
//     (idle_in_transaction_session_timeout), they apply, while A is still
//     frozen.
//
// Then A is resumed (SIGCONT: its commits fail, nothing of it is applied)
// or killed (SIGKILL), and every event delivered again is a duplicate:
// nothing lost, nothing applied twice.
func TestFrozenHolderDoesNotStallOthers(t *testing.T) {
	pg := pgtest.Start(t)
	for _, end := range []string{"sigcont", "sigkill"} {
		t.Run(end, func(t *testing.T) {
			raw, err := pg.NewDatabase(context.Background(), "frozen_"+end)
			if err != nil {
				t.Fatal(err)
			}
			frozenHolder(t, raw, end)
		})
	}
}

func frozenHolder(t *testing.T, raw, end string) {
	// Request timeout 8s: lock_timeout 2s. A's sessions are ended after 5s
	// of silence, so B's waits meet A's locks, not an ended session.
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("pool_max_conns", fmt.Sprint(heldDocs))
	q.Set(pgstore.ParamRequestTimeout, "8s")
	q.Set(pgstore.ParamIdleInTransactionTimeout, "5s")
	u.RawQuery = q.Encode()
	storeURL := u.String()
	const bound = 2 * time.Second // lock_timeout: 8s/4

	ctx := context.Background()
	st, err := pgstore.Open(ctx, storeURL)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if got := st.Settings().LockTimeout; got != bound {
		t.Fatalf("lock_timeout %v; want %v (request timeout / 4)", got, bound)
	}
	eng, err := engine.New(engine.Config{Store: st, Env: "prod"})
	if err != nil {
		t.Fatal(err)
	}
	const others = 40
	var preIDs, otherIDs, otherDocs, newIDs, newDocs []string
	for j := range others {
		preIDs = append(preIDs, fmt.Sprintf("pre-%d", j))
		otherIDs = append(otherIDs, fmt.Sprintf("other-%d", j))
		otherDocs = append(otherDocs, fmt.Sprintf("other-%d", j))
		newIDs = append(newIDs, fmt.Sprintf("new-%d", j))
		newDocs = append(newDocs, fmt.Sprintf("new-%d", j))
	}
	for _, r := range deliverAll(ctx, eng, preIDs, otherDocs) {
		if r.err != nil || r.outcome != engine.Applied {
			t.Fatalf("before: %s: %s, %v", r.id, r.outcome, r.err)
		}
	}

	// Instance A locks its documents and is frozen.
	a := startHolder(t, storeURL)
	for range heldDocs {
		if l := a.next(t); l != "holding" {
			t.Fatalf("holder: %q; want holding", l)
		}
	}
	if err := a.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	a.waitStopped(t)
	frozen := time.Now()

	// Instance B: A's events redelivered, and unrelated documents, at once.
	var heldIDs, heldDocNames []string
	for i := range heldDocs {
		ev, w := held(i)
		heldIDs, heldDocNames = append(heldIDs, ev.EventID), append(heldDocNames, w.ID)
	}
	guard, cancel := context.WithTimeout(ctx, 30*time.Second) // failure detection only
	defer cancel()
	var blocked []timed
	waited := make(chan struct{})
	go func() { defer close(waited); blocked = deliverAll(guard, eng, heldIDs, heldDocNames) }()
	// The unrelated deliveries come once B's connections wait for A's
	// documents, as they do when A's events keep being redelivered.
	pgtest.WaitLockWaiters(t, raw, heldDocs-1)
	free := deliverAll(guard, eng, append(otherIDs, newIDs...), append(otherDocs, newDocs...))
	<-waited
	for _, r := range free {
		if r.err != nil || r.outcome != engine.Applied {
			t.Errorf("unrelated %s while A is frozen: %s, %v after %v; want applied", r.id, r.outcome, r.err, r.took)
		}
	}
	p50, worst := percentile(free, 0.5), percentile(free, 1)
	t.Logf("while A is frozen: %d unrelated/new deliveries on B: p50 %v, max %v (lock bound %v)", len(free), p50, worst, bound)
	if worst >= bound {
		t.Errorf("an unrelated delivery took %v, not below the lock bound %v: it waited behind the held documents", worst, bound)
	}
	for _, r := range blocked {
		code, _, _ := store.Code(r.err)
		typ, _ := engine.Classify(r.err)
		t.Logf("held %s on B: %v after %v", r.id, r.err, r.took)
		if typ != engine.TypeTransient || code != "55P03" || errors.Is(r.err, context.DeadlineExceeded) {
			t.Errorf("redelivery of %s while A holds it: %s, %v; want a transient lock timeout (55P03)", r.id, r.outcome, r.err)
		}
		if r.took > bound+time.Second {
			t.Errorf("redelivery of %s answered after %v; want within the lock bound %v", r.id, r.took, bound)
		}
	}

	// The server ends A's silent sessions; A's documents are free while A
	// is still frozen, and its events apply on B, once.
	ids, docs := heldIDs, heldDocNames
	for len(ids) > 0 {
		var leftIDs, leftDocs []string
		for i, r := range deliverAll(guard, eng, ids, docs) {
			switch code, _, _ := store.Code(r.err); {
			case r.err == nil && r.outcome == engine.Applied:
			case r.err != nil && code == "55P03":
				leftIDs, leftDocs = append(leftIDs, ids[i]), append(leftDocs, docs[i])
			default:
				t.Fatalf("%s on B after A froze: %s, %v; want applied once, or a lock timeout before", r.id, r.outcome, r.err)
			}
		}
		ids, docs = leftIDs, leftDocs
	}
	t.Logf("A's documents free %v after A froze (idle_in_transaction_session_timeout 5s)", time.Since(frozen).Round(10*time.Millisecond))

	switch end {
	case "sigcont":
		// A's transactions go on to commit as soon as it runs again.
		if _, err := io.WriteString(a.stdin, "go\n"); err != nil {
			t.Fatal(err)
		}
		if err := a.cmd.Process.Signal(syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
		for range heldDocs {
			l := a.next(t)
			// A's commits find their sessions ended: transient, nothing applied.
			if !strings.HasPrefix(l, "result held-") || !strings.HasSuffix(l, " transient") {
				t.Errorf("A after SIGCONT: %q; want its deliveries failed transient", l)
			}
		}
		<-a.done
	case "sigkill":
		if err := a.cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		<-a.done
	}
	// Every event again: all duplicates, every document written.
	all := slices.Concat(otherIDs, newIDs, heldIDs)
	allDocs := slices.Concat(otherDocs, newDocs, heldDocNames)
	for _, r := range deliverAll(guard, eng, all, allDocs) {
		if r.err != nil || r.outcome != engine.Duplicate {
			t.Errorf("%s delivered again: %s, %v; want duplicate", r.id, r.outcome, r.err)
		}
	}
}
