package boltstore_test

import (
	"testing"

	"github.com/eventpipe/eventpipe/internal/testing/doortest"
)

// TestDoors runs the door invariant suite on a bbolt store.
func TestDoors(t *testing.T) {
	doortest.Run(t, doortest.Harness{Store: open(t)})
}
