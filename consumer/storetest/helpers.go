package storetest

import (
	"errors"
	"sync"

	"github.com/eventpipe/eventpipe/consumer/store"
)

func isNotFound(err error) bool      { return errors.Is(err, store.ErrNotFound) }
func isAlreadyExists(err error) bool { return errors.Is(err, store.ErrAlreadyExists) }

// countErrs counts outcomes from many goroutines.
type countErrs struct {
	mu   sync.Mutex
	n    int
	errs []error
}

func (c *countErrs) add(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n++
	if err != nil {
		c.errs = append(c.errs, err)
	}
}
