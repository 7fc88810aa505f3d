package irvm

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
)

// TestEvalParallelSpare: the spare work is all done, each unit once, by the time the
// evaluation returns, on one goroutine and on several; the plans' results are Eval's; a
// cancelled evaluation fails rather than returning with spare work left undone.
func TestEvalParallelSpare(t *testing.T) {
	prog, err := Load(planOf(t, map[string]string{"g.rego": groupBy}, "g/by_name", "g/by_type"))
	if err != nil {
		t.Fatal(err)
	}
	plans := make([]int, 2)
	for i, ep := range []string{"g/by_name", "g/by_type"} {
		plans[i], _ = prog.Plan(ep)
	}
	input := groupInput(400)
	data := ast.NewObject()
	want, err := prog.Eval(context.Background(), input, data, plans)
	if err != nil {
		t.Fatal(err)
	}
	const units = 500
	for _, workers := range []int{1, 2, 4} {
		var next atomic.Int64
		var runs [units]atomic.Int32
		spare := func() bool {
			u := int(next.Add(1) - 1)
			if u >= units {
				return false
			}
			runs[u].Add(1)
			return true
		}
		got, err := prog.EvalParallelSpare(context.Background(), input, data, plans, workers, spare)
		if err != nil {
			t.Fatalf("%d workers: %v", workers, err)
		}
		for i := range runs {
			if n := runs[i].Load(); n != 1 {
				t.Fatalf("%d workers: spare unit %d ran %d times, want once", workers, i, n)
			}
		}
		for _, i := range differingPlans(t, got, want) {
			t.Errorf("%d workers, plan %d: %v, Eval: %v", workers, i, got[i].Terms(), want[i].Terms())
		}
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	spare := func() bool { t.Error("spare work ran in a cancelled evaluation"); return false }
	for _, workers := range []int{1, 2} {
		if _, err := prog.EvalParallelSpare(ctx, input, data, plans, workers, spare); err == nil {
			t.Errorf("%d workers: a cancelled evaluation succeeded", workers)
		}
	}
}
