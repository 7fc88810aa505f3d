package pgstore_test

import (
	"testing"

	"github.com/eventpipe/eventpipe/internal/testing/doortest"
)

// TestDoors runs the door invariant suite on a PostgreSQL store (a
// throwaway cluster).
func TestDoors(t *testing.T) {
	_, s := start(t)
	doortest.Run(t, doortest.Harness{Store: s})
}
