// Command tfplan-normalise copies a `terraform show -json` plan from standard input to
// standard output with what changes from run to run normalised (see
// tffixtures.Normalise). scripts/terraform-fixtures.sh runs it on every fixture plan.
package main

import (
	"fmt"
	"io"
	"os"

	"github.com/eventpipe/eventpipe/internal/testing/tffixtures"
)

func main() {
	plan, err := io.ReadAll(os.Stdin)
	if err == nil {
		plan, err = tffixtures.Normalise(plan)
	}
	if err == nil {
		_, err = os.Stdout.Write(plan)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "tfplan-normalise:", err)
		os.Exit(1)
	}
}
