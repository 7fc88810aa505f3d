package callback

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/eventpipe/eventpipe/consumer/store"
	"github.com/eventpipe/eventpipe/consumer/store/pgstore"
	ct "github.com/eventpipe/eventpipe/internal/testing/consumertest"
	"github.com/eventpipe/eventpipe/internal/testing/pgtest"
)

// TestRetryDuringFinishIsInProgressAtOnce (PostgreSQL): a retry that
// arrives while the first delivery's final transaction (Finish: the
// target's update and the receipt's status) is running gets 409 at once,
// instead of waiting for the receipt's lock. The Finish transaction is kept
// running by another transaction holding the target document: it holds the
// receipt and waits for the target.
func TestRetryDuringFinishIsInProgressAtOnce(t *testing.T) {
	pg := pgtest.Start(t)
	u, err := url.Parse(pg.URL)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	// Finish waits for the target, and the holder holds it, for as long as the test needs.
	q.Set(pgstore.ParamLockTimeout, "60s")
	q.Set(pgstore.ParamIdleInTransactionTimeout, "60s")
	q.Set(pgstore.ParamStatementTimeout, "60s")
	u.RawQuery = q.Encode()
	pgs, err := pgstore.Open(context.Background(), u.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pgs.Close() })
	fs := &ct.FailingStore{Store: pgs}
	ct.Put(t, fs, runKey, map[string]any{"runId": "run-1", "status": "running", "owner": "team-a"})
	f := serve(t, fs, fs, nil)

	// Another transaction holds the target document.
	holding, release, holderDone := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	released := false
	defer func() {
		if !released {
			close(release)
		}
	}()
	go func() {
		holderDone <- pgs.RunTx(context.Background(), func(ctx context.Context, tx store.Tx) error {
			if _, err := tx.Get(ctx, runKey); err != nil && !errors.Is(err, store.ErrNotFound) {
				return err
			}
			close(holding)
			<-release
			return nil
		})
	}()
	<-holding
	first := make(chan int, 1)
	go func() {
		code, _, _ := f.callFull(t, "/callbacks/validation", okBody, nil)
		first <- code
	}()
	// The first delivery's Finish holds the receipt and waits for the target.
	pgtest.WaitLockWaiters(t, pg.URL, 1)

	type answer struct {
		code int
		hdr  http.Header
		out  map[string]any
	}
	retry := make(chan answer, 1)
	go func() {
		code, hdr, out := f.callFull(t, "/callbacks/validation", okBody, nil)
		retry <- answer{code, hdr, out}
	}()
	select {
	case r := <-retry:
		if r.code != http.StatusConflict || r.out["status"] != "processing" || r.hdr.Get("Retry-After") == "" {
			t.Errorf("retry during Finish: %d %v %v; want 409 with Retry-After and status processing", r.code, r.hdr, r.out)
		}
	case <-time.After(15 * time.Second):
		t.Error("retry during Finish got no answer in 15s: it waits for the receipt's lock")
	}
	select {
	case c := <-first:
		t.Fatalf("first delivery answered %d while its Finish should still wait for the target", c)
	default:
	}
	close(release)
	released = true
	if err := <-holderDone; err != nil {
		t.Fatal(err)
	}
	if c := <-first; c != http.StatusOK {
		t.Fatalf("first delivery: %d; want 200", c)
	}
	code, out := f.call(t, "/callbacks/validation", okBody, nil)
	if code != http.StatusOK || out["idempotent_replayed"] != true || out["status"] != "completed" {
		t.Fatalf("retry after Finish: %d %v; want 200 replayed with status completed", code, out)
	}
}
