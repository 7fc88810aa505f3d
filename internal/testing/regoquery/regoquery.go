// Package regoquery compiles eventpipe's embedded rules (policies.Modules) for a query of
// a test's own, for tests that read what the rules compute (the document model, a table)
// rather than their verdicts (ruletest.Engine). It imports no eventpipe package but
// policies, so the tests of the packages the check imports can use it.
package regoquery

import (
	"context"
	"fmt"
	"testing"

	"github.com/open-policy-agent/opa/v1/rego"

	"github.com/eventpipe/eventpipe/policies"
)

// New compiles the embedded rules for query.
func New(query string) (rego.PreparedEvalQuery, error) {
	mods, err := policies.Modules()
	if err != nil {
		return rego.PreparedEvalQuery{}, err
	}
	opts := []func(*rego.Rego){rego.Query(query)}
	for name, src := range mods {
		opts = append(opts, rego.Module(name, src))
	}
	q, err := rego.New(opts...).PrepareForEval(context.Background())
	if err != nil {
		return rego.PreparedEvalQuery{}, fmt.Errorf("compiling the rules for %q: %w", query, err)
	}
	return q, nil
}

// Prepare is New for a test: it fails tb when the rules do not compile.
func Prepare(tb testing.TB, query string) rego.PreparedEvalQuery {
	tb.Helper()
	q, err := New(query)
	if err != nil {
		tb.Fatal(err)
	}
	return q
}
