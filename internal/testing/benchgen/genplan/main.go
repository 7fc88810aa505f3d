// Command genplan writes a generated document of -n resources to stdout, for
// scripts/bench-check.sh: a `pulumi preview --json` document (-format preview, the
// default), the same resources as a `pulumi stack export` (export) or as a `terraform show
// -json` plan (terraform); -format foreach-terraform writes a plan of about -n changes of
// a for_each module as Terraform writes it, foreach-preview the same resources as a
// preview (benchgen.GenerateForEachTerraform, GenerateForEachPreview).
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/eventpipe/eventpipe/internal/testing/benchgen"
)

func main() {
	n := flag.Int("n", 10000, "number of resources (a multiple of 10)")
	format := flag.String("format", "preview", "preview, export, terraform, foreach-terraform or foreach-preview")
	flag.Parse()
	generate, ok := map[string]func(int) ([]byte, error){
		"preview": benchgen.Generate, "export": benchgen.GenerateExport, "terraform": benchgen.GenerateTerraform,
		"foreach-terraform": benchgen.GenerateForEachTerraform, "foreach-preview": benchgen.GenerateForEachPreview,
	}[*format]
	if !ok {
		fmt.Fprintf(os.Stderr, "genplan: -format %q: want preview, export, terraform, foreach-terraform or foreach-preview\n", *format)
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
