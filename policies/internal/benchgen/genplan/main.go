// Command genplan writes a generated `pulumi preview --json` document of -n resources to
// stdout, for scripts/bench-check.sh.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/eventpipe/eventpipe/policies/internal/benchgen"
)

func main() {
	n := flag.Int("n", 10000, "number of resources (a multiple of 10)")
	flag.Parse()
	data, err := benchgen.Generate(*n)
	if err != nil {
		fmt.Fprintln(os.Stderr, "genplan:", err)
		os.Exit(1)
	}
	if _, err := os.Stdout.Write(data); err != nil {
		fmt.Fprintln(os.Stderr, "genplan:", err)
		os.Exit(1)
	}
}
