package engine

import (
	"fmt"
	"runtime"
	"sync"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/eventpipe/eventpipe/policies/plan"
)

// toValue converts the plan to OPA's value form, {"resources": [...]}, converting the
// resources on every processor at once.
func toValue(p *plan.Plan) (ast.Value, *ast.Array, error) {
	terms := make([]*ast.Term, len(p.Resources))
	shards := runtime.GOMAXPROCS(0)
	errs := make([]error, shards)
	var wg sync.WaitGroup
	for s := 0; s < shards; s++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := s * len(terms) / shards; i < (s+1)*len(terms)/shards; i++ {
				v, err := ast.InterfaceToValue(p.Resources[i].Input())
				if err != nil {
					errs[s] = fmt.Errorf("converting resource %s to OPA input: %w", p.Resources[i].URN, err)
					return
				}
				terms[i] = ast.NewTerm(v)
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, nil, err
		}
	}
	resources := ast.NewArray(terms...)
	return ast.NewObject(ast.Item(ast.InternedTerm("resources"), ast.NewTerm(resources))), resources, nil
}
