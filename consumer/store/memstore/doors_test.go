package memstore_test

import (
	"testing"

	"github.com/eventpipe/eventpipe/consumer/store/memstore"
	"github.com/eventpipe/eventpipe/internal/testing/doortest"
)

// TestDoors runs the door invariant suite on the memory store.
func TestDoors(t *testing.T) {
	doortest.Run(t, doortest.Harness{Store: memstore.New()})
}
