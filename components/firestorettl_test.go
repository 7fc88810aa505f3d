package components_test

import (
	"testing"

	"github.com/eventpipe/eventpipe/components"
	"github.com/eventpipe/eventpipe/spec"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

func TestFirestoreTTL(t *testing.T) {
	plan := runMocked(t, nil, func(ctx *pulumi.Context) error {
		_, err := components.NewFirestoreTTL(ctx, "orders", &components.FirestoreTTLArgs{
			Project: "acme-dev", Database: "(default)", Collections: components.TTLCollections("eventpipe_"), Field: spec.ExpiryField,
		})
		return err
	})
	fields := custom(plan, tField)
	want := []string{"orders-eventpipe_dedupe", "orders-eventpipe_leases", "orders-eventpipe_poison", "orders-eventpipe_receipts"}
	if !equalJSON(keys(fields), want) {
		t.Fatalf("fields = %v, want %v", keys(fields), want)
	}
	for name, f := range fields {
		if input(f, "field") != "expireAt" || input(f, "database") != "(default)" || input(f, "project") != "acme-dev" {
			t.Errorf("%s: %v", name, f.Inputs)
		}
		// A nil ttlConfig silently disables TTL: it must be present (empty object).
		if ttl, ok := f.Inputs["ttlConfig"].(map[string]any); !ok || len(ttl) != 0 {
			t.Errorf("%s: ttlConfig = %#v, want {}", name, f.Inputs["ttlConfig"])
		}
		if idx, ok := f.Inputs["indexConfig"].(map[string]any); !ok || len(idx) != 0 {
			t.Errorf("%s: indexConfig = %#v, want {} (single-field index exemption)", name, f.Inputs["indexConfig"])
		}
	}
	if got := input(fields["orders-eventpipe_leases"], "collection"); got != "eventpipe_leases" {
		t.Errorf("collection = %v", got)
	}
}
