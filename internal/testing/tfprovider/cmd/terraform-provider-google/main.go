// Command terraform-provider-google is the stand-in google provider as a Terraform
// plugin (see package tfprovider). Installed under a name containing "google-beta" it
// serves the google-beta flavour. Terraform starts it; it is not run by hand.
package main

import (
	"log"
	"os"
	"path/filepath"
	"strings"

	"github.com/eventpipe/eventpipe/internal/testing/tfprovider"
)

func main() {
	beta := strings.Contains(filepath.Base(os.Args[0]), "google-beta")
	if err := tfprovider.Serve(beta); err != nil {
		log.Fatal(err)
	}
}
