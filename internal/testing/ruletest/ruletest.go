// Package ruletest compiles eventpipe's embedded rules for tests that judge documents
// with them, so each such test does not build the engine by hand.
package ruletest

import (
	"context"
	"testing"

	"github.com/eventpipe/eventpipe/policies"
	"github.com/eventpipe/eventpipe/policies/evaluate"
)

// Engine returns the embedded rules (policies.Modules, entry policies.Package) compiled
// with config as data.config; nil config leaves every setting at its default. It fails
// t if they do not compile.
func Engine(t testing.TB, config map[string]any) *evaluate.Engine {
	t.Helper()
	mods, err := policies.Modules()
	if err != nil {
		t.Fatal(err)
	}
	eng, err := evaluate.New(context.Background(), evaluate.Options{Modules: mods, Package: policies.Package, Config: config})
	if err != nil {
		t.Fatal(err)
	}
	return eng
}
