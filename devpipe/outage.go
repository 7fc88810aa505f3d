package devpipe

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/eventpipe/eventpipe/consumer/store"
)

// ErrOutage is the cause inside the store errors a simulated outage returns.
var ErrOutage = errors.New("devpipe: simulated store outage")

// Outage switches a store between up and down. While down, every
// transaction fails with a transient UNAVAILABLE store error, as a database
// that is briefly unreachable does; nothing is read or written.
type Outage struct {
	down atomic.Bool
}

// Set takes the stores down (true) or brings them back (false).
func (o *Outage) Set(down bool) { o.down.Store(down) }

// Down reports whether the outage is on.
func (o *Outage) Down() bool { return o.down.Load() }

// Wrap returns s with the outage switch in front of it.
func (o *Outage) Wrap(s store.Store) store.Store { return &outageStore{Store: s, o: o} }

type outageStore struct {
	store.Store
	o *Outage
}

// RunTx fails at once while the outage is on, else runs on the wrapped store.
func (s *outageStore) RunTx(ctx context.Context, fn func(ctx context.Context, tx store.Tx) error) error {
	if s.o.Down() {
		return &store.Error{Op: "begin transaction", Code: "UNAVAILABLE", Kind: store.KindTransient, Err: ErrOutage}
	}
	return s.Store.RunTx(ctx, fn)
}
