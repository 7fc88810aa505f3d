package components_test

import (
	"strings"
	"testing"

	"github.com/eventpipe/eventpipe/components"
	"github.com/eventpipe/eventpipe/spec"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

func TestFirestoreTTL(t *testing.T) {
	plan := runMocked(t, func(ctx *pulumi.Context) error {
		_, err := components.NewFirestoreTTL(ctx, "orders", &components.FirestoreTTLArgs{
			Project: pulumi.String("acme-dev"), Database: "(default)", Collections: components.TTLCollections("eventpipe_"),
		})
		return err
	})
	fields := custom(plan, tField)
	want := []string{"orders-eventpipe_dedupe", "orders-eventpipe_leases", "orders-eventpipe_poison", "orders-eventpipe_receipts"}
	if !equalJSON(keys(fields), want) {
		t.Fatalf("fields = %v, want %v", keys(fields), want)
	}
	for name, f := range fields {
		if input(f, "field") != spec.ExpiryField || input(f, "database") != "(default)" || input(f, "project") != "acme-dev" {
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

func TestFirestoreTTLRejectsMissingArgs(t *testing.T) {
	err, regs := runErr(func(ctx *pulumi.Context) error {
		_, err := components.NewFirestoreTTL(ctx, "orders", &components.FirestoreTTLArgs{})
		return err
	})
	for _, want := range []string{"(3 problems)", "project (not set)", "database (not set)", "collections (not set)"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v, want %q", err, want)
		}
	}
	if len(regs) != 0 {
		t.Errorf("%d resources registered", len(regs))
	}
}
