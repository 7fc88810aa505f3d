package engine

import (
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/eventpipe/eventpipe/policies/irvm"
)

// plannedRules is policies/*.rego as OPA's planner compiles them, one entrypoint per
// deny/warn rule, loaded by the interpreter and saved in its binary form
// (rules.program.bin), with the rules' metadata and type guards and the digest of the
// rule files it was made from (rules.plan.json). New uses it instead of parsing, compiling and planning the
// rules (about 80 ms of CPU at every start of `eventpipe check`) when the rule files it
// is given have that digest, and does all that itself otherwise, so a stale file costs
// time, never a wrong verdict. TestEmbeddedPlanIsCurrent fails when it is
// stale and rewrites it with EVENTPIPE_UPDATE_PLAN=1.
//
//go:embed rules.plan.json
var plannedRules []byte

//go:embed rules.program.bin
var plannedProgram []byte

// plannedFile is the layout of rules.plan.json: what New derives from the rule files.
type plannedFile struct {
	// Digest is modulesDigest of the package and rule files planned.
	Digest string `json:"digest"`
	// Rules are the rules with their metadata, ordered by id.
	Rules []Rule `json:"rules"`
	// Types maps each resource type to the resource rules that can match it, or is nil
	// when a resource rule is not guarded by its type.
	Types map[string][]string `json:"types"`

	program *irvm.Program
}

// modulesDigest identifies a rule set: SHA-256 over the package name and every file name
// and source, in name order.
func modulesDigest(pkg string, modules map[string]string) string {
	names := make([]string, 0, len(modules))
	for name := range modules {
		names = append(names, name)
	}
	sort.Strings(names)
	h := sha256.New()
	fmt.Fprintf(h, "%d:%s\n", len(pkg), pkg)
	for _, name := range names {
		fmt.Fprintf(h, "%d:%s%d:%s\n", len(name), name, len(modules[name]), modules[name])
	}
	return hex.EncodeToString(h.Sum(nil))
}

// embeddedPlan returns the embedded planned rules if they were planned from exactly
// these rule files, or nil.
func embeddedPlan(pkg string, modules map[string]string) (*plannedFile, error) {
	var f plannedFile
	if err := json.Unmarshal(plannedRules, &f); err != nil {
		return nil, fmt.Errorf("decoding the embedded planned rules: %w", err)
	}
	if f.Digest != modulesDigest(pkg, modules) {
		return nil, nil
	}
	prog, err := irvm.UnmarshalProgram(plannedProgram)
	if err != nil {
		return nil, fmt.Errorf("the embedded planned rules: %w", err)
	}
	f.program = prog
	return &f, nil
}
