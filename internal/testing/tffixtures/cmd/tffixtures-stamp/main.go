// Command tffixtures-stamp reads or writes the Terraform plan fixtures' stamp
// (tffixtures.StampFile): the CLI versions the committed plans were made with and the
// digest of their inputs.
//
// Usage:
//
//	tffixtures-stamp check REPO            exit 0 when the plans are current, 1 when an input changed
//	tffixtures-stamp version REPO CLI      print the version CLI's plans were made with
//	tffixtures-stamp write REPO CLI=VERSION...  stamp freshly regenerated plans
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/eventpipe/eventpipe/internal/testing/tffixtures"
)

func main() {
	code, err := run(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "tffixtures-stamp:", err)
	}
	os.Exit(code)
}

func run(args []string) (int, error) {
	if len(args) < 2 {
		return 2, fmt.Errorf("usage: tffixtures-stamp check|version|write REPO [...]")
	}
	repo := args[1]
	dir := filepath.Join(repo, "policies", "testdata", "terraform")
	switch args[0] {
	case "check":
		stamp, err := tffixtures.ReadStamp(dir)
		if err != nil {
			return 2, err
		}
		digest, err := tffixtures.InputsDigest(repo, stamp.Versions)
		if err != nil {
			return 2, err
		}
		if digest != stamp.Digest {
			fmt.Printf("the fixture inputs changed since the plans were made (digest %s, stamped %s): regenerate them with scripts/terraform-fixtures.sh\n", digest, stamp.Digest)
			return 1, nil
		}
		return 0, nil
	case "version":
		if len(args) != 3 {
			return 2, fmt.Errorf("usage: tffixtures-stamp version REPO CLI")
		}
		stamp, err := tffixtures.ReadStamp(dir)
		if err != nil {
			return 2, err
		}
		v, ok := stamp.Versions[args[2]]
		if !ok {
			return 2, fmt.Errorf("no CLI %q in the stamp (want one of %v)", args[2], tffixtures.CLIs)
		}
		fmt.Println(v)
		return 0, nil
	case "write":
		stamp := tffixtures.Stamp{Versions: map[string]string{}}
		for _, a := range args[2:] {
			cli, version, ok := strings.Cut(a, "=")
			if !ok || version == "" {
				return 2, fmt.Errorf("want CLI=VERSION, got %q", a)
			}
			stamp.Versions[cli] = version
		}
		for _, cli := range tffixtures.CLIs {
			if stamp.Versions[cli] == "" {
				return 2, fmt.Errorf("no version given for %s", cli)
			}
		}
		digest, err := tffixtures.InputsDigest(repo, stamp.Versions)
		if err != nil {
			return 2, err
		}
		stamp.Digest = digest
		return 0, tffixtures.WriteStamp(dir, stamp)
	default:
		return 2, fmt.Errorf("unknown command %q (want check, version or write)", args[0])
	}
}
