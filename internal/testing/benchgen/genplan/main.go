// Command genplan writes a generated document of -n resources to stdout, for
// scripts/bench-check.sh: a `pulumi preview --json` document (-format preview, the
// default), the same resources as a `pulumi stack export` (export) or as a `terraform show
// -json` plan (terraform).
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/eventpipe/eventpipe/internal/testing/benchgen"
)

func main() {
	n := flag.Int("n", 10000, "number of resources (a multiple of 10)")
	format := flag.String("format", "preview", "preview, export or terraform")
	flag.Parse()
	generate, ok := map[string]func(int) ([]byte, error){
		"preview": benchgen.Generate, "export": benchgen.GenerateExport, "terraform": benchgen.GenerateTerraform,
	}[*format]
	if !ok {
		fmt.Fprintf(os.Stderr, "genplan: -format %q: want preview, export or terraform\n", *format)
		os.Exit(2)
	}
	data, err := generate(*n)
	if err != nil {
		fmt.Fprintln(os.Stderr, "genplan:", err)
		os.Exit(1)
	}
	if _, err := os.Stdout.Write(data); err != nil {
		fmt.Fprintln(os.Stderr, "genplan:", err)
		os.Exit(1)
	}
}
