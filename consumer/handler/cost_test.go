package handler

import (
	"context"
	"net/http"
	"sync"
	"testing"

	"github.com/eventpipe/eventpipe/consumer/store"
	"github.com/eventpipe/eventpipe/consumer/store/memstore"
	"github.com/eventpipe/eventpipe/consumer/store/opcount"
)

// commits counts a store's transactions that write (each a durable
// commit on a syncing store) and its reads (opcount's tally of each).
type commits struct {
	store.Store
	mu             sync.Mutex
	writing, reads int64
}

func (c *commits) RunTx(ctx context.Context, fn func(ctx context.Context, tx store.Tx) error) error {
	var tally opcount.Tally
	err := c.Store.RunTx(ctx, func(ctx context.Context, tx store.Tx) error {
		tally = opcount.Tally{}
		return fn(ctx, tally.Tx(tx))
	})
	n := tally.Counts()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reads += n.Reads
	if err == nil && n.Writes+n.Deletes > 0 {
		c.writing++
	}
	return err
}

func (c *commits) take() (writing, reads int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	w, r := c.writing, c.reads
	c.writing, c.reads = 0, 0
	return w, r
}

// TestKeyCosts: a new key costs two committing transactions (claim,
// settle), a replay of a completed key one read and no commit, whatever
// the answer (issue 35 measures them on a syncing PostgreSQL).
func TestKeyCosts(t *testing.T) {
	st := &commits{Store: memstore.New()}
	r := newRig(t, &fakeHandler{}, Config{}, st)
	for _, body := range []string{`{"a":1}`, `{"a":2}`} { // 201, and 400 refused for good
		st.take()
		key := "cost-" + body
		if w := r.do(http.MethodPost, "/orders", key, body); w.Code/100 == 5 {
			t.Fatalf("%s: %d", body, w.Code)
		}
		if writing, reads := st.take(); writing != 2 || reads != 2 {
			t.Errorf("%s, a new key: %d committing transactions and %d reads, want 2 and 2 (claim, settle)", body, writing, reads)
		}
		if w := r.do(http.MethodPost, "/orders", key, body); w.Header().Get(ReplayedHeader) != "true" {
			t.Fatalf("%s: no replay: %d", body, w.Code)
		}
		if writing, reads := st.take(); writing != 0 || reads != 1 {
			t.Errorf("%s, a replay: %d committing transactions and %d reads, want 0 and 1", body, writing, reads)
		}
	}
}
