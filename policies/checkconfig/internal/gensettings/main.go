// Command gensettings writes policies/lib_settings.rego, the rules' default settings
// (checkconfig.RegoSettings), to the file named by its argument. `go generate
// ./policies/checkconfig` runs it.
package main

import (
	"fmt"
	"os"

	"github.com/eventpipe/eventpipe/policies/checkconfig"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: gensettings OUTPUT.rego")
		os.Exit(2)
	}
	src, err := checkconfig.RegoSettings()
	if err == nil {
		err = os.WriteFile(os.Args[1], src, 0o644)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "gensettings:", err)
		os.Exit(1)
	}
}
