package analyzer_test

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/plugin"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"

	"github.com/eventpipe/eventpipe/policies/analyzer"
)

// BenchmarkPreviewProd is the plugin's share of a preview of the prod stack (111
// resources), without gRPC: Analyze on every resource, then AnalyzeStack.
func BenchmarkPreviewProd(b *testing.B) {
	dir, err := packDirAbs()
	if err != nil {
		b.Fatal(err)
	}
	srv, err := analyzer.NewServer(context.Background(), analyzer.Pack{Dir: dir, Version: "1.0.0"}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		b.Fatal(err)
	}
	opts := plugin.MarshalOptions{KeepUnknowns: true, KeepSecrets: true, SkipInternalKeys: true}
	var stack []*pulumirpc.AnalyzerResource
	for _, r := range resources(b, renderStack(b, "prod")) {
		props, err := plugin.MarshalProperties(r.Properties, opts)
		if err != nil {
			b.Fatal(err)
		}
		deps := map[string]*pulumirpc.AnalyzerPropertyDependencies{}
		for k, urns := range r.PropertyDependencies {
			d := &pulumirpc.AnalyzerPropertyDependencies{}
			for _, u := range urns {
				d.Urns = append(d.Urns, string(u))
			}
			deps[string(k)] = d
		}
		stack = append(stack, &pulumirpc.AnalyzerResource{Urn: string(r.URN), Type: string(r.Type), Name: r.Name, Properties: props,
			Parent: string(r.Parent), PropertyDependencies: deps})
	}
	ctx := context.Background()
	b.ResetTimer()
	for b.Loop() {
		for _, r := range stack {
			if _, err := srv.Analyze(ctx, &pulumirpc.AnalyzeRequest{Urn: r.Urn, Type: r.Type, Name: r.Name, Properties: r.Properties}); err != nil {
				b.Fatal(err)
			}
		}
		if _, err := srv.AnalyzeStack(ctx, &pulumirpc.AnalyzeStackRequest{Resources: stack}); err != nil {
			b.Fatal(err)
		}
	}
}
