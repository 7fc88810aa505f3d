package provider_test

import (
	"testing"

	"github.com/blang/semver"
	"github.com/pulumi/pulumi-go-provider/integration"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/eventpipe/eventpipe/provider"
)

// newServer serves the eventpipe provider through pulumi-go-provider's
// integration server: the gRPC provider the Pulumi engine talks to, with
// mocks (nil for none) answering the registrations of constructed
// components.
func newServer(t *testing.T, mocks pulumi.MockResourceMonitor) integration.Server {
	t.Helper()
	prov, err := provider.New()
	if err != nil {
		t.Fatal(err)
	}
	opts := []integration.ServerOption{integration.WithProvider(prov)}
	if mocks != nil {
		opts = append(opts, integration.WithMocks(mocks))
	}
	s, err := integration.NewServer(t.Context(), provider.Name, semver.MustParse(provider.DevVersion), opts...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
