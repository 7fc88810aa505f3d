// Command pulumi-resource-time is the test-only stand-in for the Pulumi time provider
// plugin's time_sleep (package gcpstandin, TimeProvider). Tests build it and install it
// with `pulumi plugin install resource time 0.1.1 --file BINARY`; it appends to the
// ops.log of the folder EVENTPIPE_GCP_STANDIN_DIR names.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/eventpipe/eventpipe/internal/testing/gcpstandin"
	p "github.com/pulumi/pulumi-go-provider"
)

func main() {
	prov := gcpstandin.TimeProvider(os.Getenv(gcpstandin.EnvDir))
	if err := p.RunProvider(context.Background(), "time", gcpstandin.TimeVersion, prov); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
