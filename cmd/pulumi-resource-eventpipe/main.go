// Command pulumi-resource-eventpipe is eventpipe's Pulumi component
// provider plugin (package provider). The Pulumi CLI starts it: from this
// folder's source through PulumiPlugin.yaml (`pulumi package add`), or as a
// built binary on PATH or given by path.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/eventpipe/eventpipe/provider"
)

func main() {
	if err := provider.Run(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
