// Command stacks is the Pulumi program of every eventpipe environment
// (Pulumi.yaml: main: stacks/). All logic lives in components.Program, which
// the offline renderer runs too.
package main

import (
	"fmt"
	"os"

	"github.com/eventpipe/eventpipe/components"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

func main() {
	keys, err := components.ConfigKeysFromEnv(os.Getenv("PULUMI_CONFIG"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	pulumi.Run(components.Program(components.ProgramOptions{ConfigKeys: keys}))
}
