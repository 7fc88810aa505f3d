package irvm

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/open-policy-agent/opa/v1/ast"
)

// A parallel evaluation runs the plans of one evaluation on several goroutines. They
// share the memoized results of the two-parameter functions (each computed once, by the
// first goroutine that needs it, while the others wait for it) and the scan indexes, so
// the rules' shared helpers cost what they cost in one goroutine. Waiting cannot
// deadlock: Rego has no recursion, so a function being computed never waits, directly or
// not, for itself. Functions called inside a WithStmt keep per-goroutine memoization.

// shared is the state the goroutines of a parallel evaluation share.
type shared struct {
	mu      sync.Mutex
	memo    []sharedEntry
	indexes map[indexKey]*scanIndex
}

// sharedEntry is one function's memoized result: computing while done is open, then
// value or err.
type sharedEntry struct {
	started bool
	done    chan struct{}
	value   *ast.Term
	err     error
}

// EvalParallel is Eval with the plans spread over up to workers goroutines, which take
// the next plan as they finish one. The results are Eval's.
func (p *Program) EvalParallel(ctx context.Context, input, data ast.Value, plans []int, workers int) ([]ResultSet, error) {
	workers = min(workers, len(plans))
	if workers <= 1 {
		return p.Eval(ctx, input, data, plans)
	}
	for _, idx := range plans {
		if idx < 0 || idx >= len(p.plans) {
			return nil, fmt.Errorf("evaluating plan %d: the policy has %d plans", idx, len(p.plans))
		}
	}
	sh := &shared{memo: make([]sharedEntry, len(p.funcs)), indexes: map[indexKey]*scanIndex{}}
	out := make([]ResultSet, len(plans))
	errs := make([]error, workers)
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := p.states.Get().(*state)
			defer func() {
				s.release()
				p.states.Put(s)
			}()
			for {
				i := int(next.Add(1) - 1)
				if i >= len(plans) {
					return
				}
				s.shared = sh
				rs, err := p.eval(ctx, s, input, data, plans[i:i+1])
				if err != nil {
					errs[w] = err
					next.Store(int64(len(plans))) // the others stop after their plan
					return
				}
				out[i] = rs[0]
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// sharedCall is call for a memoized function at the base memoization level of a parallel
// evaluation.
func (s *state) sharedCall(f []*ast.Term, fi int, args []operand) (*ast.Term, int) {
	sh := s.shared
	sh.mu.Lock()
	e := &sh.memo[fi]
	if e.started {
		done := e.done
		sh.mu.Unlock()
		select {
		case <-done:
		case <-s.ctx.Done():
			return nil, s.fail(s.ctx.Err())
		}
		if e.err != nil {
			return nil, s.fail(e.err)
		}
		return e.value, flowNext
	}
	e.started = true
	e.done = make(chan struct{})
	sh.mu.Unlock()
	v, r := s.invoke(f, fi, args)
	sh.mu.Lock()
	switch r {
	case flowNext:
		e.value = v
	default:
		e.err = s.err
		if e.err == nil {
			e.err = fmt.Errorf("evaluating %s: control left the function", s.prog.funcs[fi].name)
		}
	}
	close(e.done)
	sh.mu.Unlock()
	return v, r
}
