// Command pulumi-resource-gcp is the test-only stand-in for the Pulumi gcp provider plugin
// (package gcpstandin). Tests build it and install it with
// `pulumi plugin install resource gcp 8.41.1 --file BINARY`; it keeps its state in the
// folder EVENTPIPE_GCP_STANDIN_DIR names.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/eventpipe/eventpipe/internal/testing/gcpstandin"
	p "github.com/pulumi/pulumi-go-provider"
)

func main() {
	prov := gcpstandin.Provider(os.Getenv(gcpstandin.EnvDir))
	if err := p.RunProvider(context.Background(), "gcp", gcpstandin.Version, prov); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
