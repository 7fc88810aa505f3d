package provider_test

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/common/diag"
	"github.com/pulumi/pulumi/sdk/v3/go/common/diag/colors"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/plugin"
)

// TestPluginBinaryServesTheSchema builds cmd/pulumi-resource-eventpipe and
// starts it through Pulumi's own plugin host (plugin.NewProviderFromPath: the
// launch, port handshake and gRPC client the engine uses for a provider
// binary given by path), then reads its schema and version over gRPC: the
// binary serves the schema the provider package serves in process (the
// one TestServedSchemaMatchesReviewedCopy checks), under its own version.
func TestPluginBinaryServesTheSchema(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts the provider plugin")
	}
	bin := filepath.Join(t.TempDir(), "pulumi-resource-eventpipe")
	run(t, filepath.Join("..", "cmd", "pulumi-resource-eventpipe"), "go", "build", "-o", bin, ".")

	var stderr bytes.Buffer
	sink := diag.DefaultSink(&stderr, &stderr, diag.FormatOptions{Color: colors.Never})
	pctx, err := plugin.NewContext(context.Background(), sink, sink, nil, nil, t.TempDir(), nil, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := pctx.Close(); err != nil {
			t.Errorf("closing the plugin host: %v", err)
		}
	})
	prov, err := plugin.NewProviderFromPath(pctx.Host, pctx, bin)
	if err != nil {
		t.Fatalf("start the plugin: %v\n%s", err, stderr.String())
	}
	t.Cleanup(func() { _ = prov.Close() })

	info, err := prov.GetPluginInfo(t.Context())
	if err != nil {
		t.Fatalf("GetPluginInfo: %v", err)
	}
	if info.Version == nil {
		t.Fatal("the plugin reports no version")
	}
	resp, err := prov.GetSchema(t.Context(), plugin.GetSchemaRequest{})
	if err != nil {
		t.Fatalf("GetSchema: %v\n%s", err, stderr.String())
	}
	var served, inProcess map[string]any
	if err := json.Unmarshal(resp.Schema, &served); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(servedSchema(t), &inProcess); err != nil {
		t.Fatal(err)
	}
	if served["version"] != info.Version.String() {
		t.Errorf("schema version %v, plugin version %s", served["version"], info.Version)
	}
	// The in-process server serves the development version; the binary
	// reports the one of its build.
	delete(served, "version")
	delete(inProcess, "version")
	a, _ := json.Marshal(served)
	b, _ := json.Marshal(inProcess)
	if !bytes.Equal(a, b) {
		t.Errorf("the plugin binary serves another schema than the provider package:\n%s", firstDifference(b, a))
	}
}
