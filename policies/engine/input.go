package engine

import (
	"runtime"
	"sync"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/eventpipe/eventpipe/policies/plan"
)

// minValuesPerShard is the least number of resources worth a goroutine of their own when
// the plan is turned into OPA input: a small plan is converted on the calling goroutine.
const minValuesPerShard = 256

// toValue converts the plan to OPA's value form, {"resources": [...]}, element i being
// p.Resources[i] as the resource rules see it. The properties, the bulk of it, were built
// by plan.Parse already and are shared; only each resource's few top-level fields are
// made here, on every processor at once for a large plan.
func toValue(p *plan.Plan) (ast.Value, *ast.Array, error) {
	terms := make([]*ast.Term, len(p.Resources))
	convert := func(lo, hi int) {
		for i := lo; i < hi; i++ {
			terms[i] = ast.NewTerm(p.Resources[i].Value())
		}
	}
	shards := min(runtime.GOMAXPROCS(0), len(terms)/minValuesPerShard)
	if shards <= 1 {
		convert(0, len(terms))
	} else {
		var wg sync.WaitGroup
		for s := 0; s < shards; s++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				convert(s*len(terms)/shards, (s+1)*len(terms)/shards)
			}()
		}
		wg.Wait()
	}
	resources := ast.NewArray(terms...)
	return ast.NewObject(ast.Item(ast.InternedTerm("resources"), ast.NewTerm(resources))), resources, nil
}
