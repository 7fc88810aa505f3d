// Command pulumi-analyzer-policy-eventpipe is eventpipe's Pulumi analyzer plugin. Pulumi
// starts it for `pulumi preview --policy-pack DIR` (and `pulumi up`) when
// DIR/PulumiPolicy.yaml says `runtime: eventpipe`, finding it on $PATH:
//
//	go install ./cmd/pulumi-analyzer-policy-eventpipe
//	pulumi preview --policy-pack policies --policy-pack-config policy-config.json
//
// It evaluates the pack's rule files with eventpipe's rule engine (see policies/analyzer).
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/eventpipe/eventpipe/policies/analyzer"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := analyzer.Main(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "pulumi-analyzer-policy-eventpipe:", err)
		os.Exit(1)
	}
}
