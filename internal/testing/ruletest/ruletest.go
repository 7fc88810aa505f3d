// Package ruletest compiles eventpipe's embedded rules for tests that judge documents
// with them, so each such test does not build the engine by hand.
package ruletest

import (
	"context"
	"sync"
	"testing"

	"github.com/eventpipe/eventpipe/policies"
	"github.com/eventpipe/eventpipe/policies/evaluate"
)

// compiled is the embedded rules compiled once for the test binary; each Engine prepares
// its own configuration on them (evaluate.Compiled.Engine).
var compiled = sync.OnceValues(func() (*evaluate.Compiled, error) {
	mods, err := policies.Modules()
	if err != nil {
		return nil, err
	}
	return evaluate.Compile(mods, policies.Package)
})

// Engine returns the embedded rules (policies.Modules, entry policies.Package) compiled
// with config as data.config; nil config leaves every setting at its default. It fails
// t if they do not compile. The rules are compiled once per test binary.
func Engine(t testing.TB, config map[string]any) *evaluate.Engine {
	t.Helper()
	c, err := compiled()
	if err != nil {
		t.Fatal(err)
	}
	eng, err := c.Engine(context.Background(), config)
	if err != nil {
		t.Fatal(err)
	}
	return eng
}
