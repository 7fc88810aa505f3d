package memstore_test

import (
	"testing"

	"github.com/eventpipe/eventpipe/consumer/store/memstore"
	"github.com/eventpipe/eventpipe/internal/testing/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, storetest.Harness{Store: memstore.New()})
}
