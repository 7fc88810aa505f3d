package engine_test

import (
	"testing"

	"github.com/eventpipe/eventpipe/consumer/store/memstore"
	"github.com/eventpipe/eventpipe/consumer/storetest"
)

// FuzzOrdering runs the ordering property of the conformance suite
// (storetest.OrderingProperty: no message freezes a document; deliveries
// inside the window converge) on the memory store, for generated cases
// from each seed; plain go test runs the seed corpus.
func FuzzOrdering(f *testing.F) {
	for seed := range uint64(200) {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, seed uint64) {
		storetest.OrderingProperty(t, memstore.New(), seed)
	})
}
