// Package policies holds eventpipe's OPA (Rego) rules — the *.rego files beside this one:
// the model of the documents they read, the rules and the entry every runtime evaluates,
// also a Pulumi policy pack (PulumiPolicy.yaml, run by policies/analyzer) — and gives them
// to the checker. Every non-test *.rego file in this folder is loaded: adding a rule file
// needs no Go change. Evaluation lives in policies/evaluate, decoding in policies/plan,
// output formats in policies/report.
package policies

import (
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"strings"
)

//go:embed *.rego
var files embed.FS

// Package is the entry package: its deny, warn, waived and summary rules are what every
// runtime evaluates; the rules themselves are in Package + ".rules".
const Package = "eventpipe"

// Modules returns the rule files (name → source), without the *_test.rego files.
func Modules() (map[string]string, error) {
	return read(files, false)
}

// ModulesIn returns the rule files of a folder holding this policy pack (os.DirFS of it),
// chosen and named as Modules chooses and names the embedded ones: the files Pulumi's
// analyzer plugin evaluates.
func ModulesIn(fsys fs.FS) (map[string]string, error) {
	return read(fsys, false)
}

func read(fsys fs.FS, withTests bool) (map[string]string, error) {
	names, err := fs.Glob(fsys, "*.rego")
	if err != nil {
		return nil, fmt.Errorf("listing rule files: %w", err)
	}
	sort.Strings(names)
	out := make(map[string]string, len(names))
	for _, name := range names {
		if !withTests && strings.HasSuffix(name, "_test.rego") {
			continue
		}
		src, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, fmt.Errorf("reading rule file %s: %w", name, err)
		}
		out["policies/"+name] = string(src)
	}
	return out, nil
}
