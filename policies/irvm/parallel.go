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
	// spare is EvalParallelSpare's other work, nil when there is none.
	spare func() bool
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
	return p.EvalParallelSpare(ctx, input, data, plans, workers, nil)
}

// EvalParallelSpare is EvalParallel that gives its goroutines other work when they would
// idle: spare, if not nil, runs one small unit of work of the caller's (it must be safe
// to call from several goroutines at once, and must not evaluate this evaluation's
// plans) and reports whether it found one to run. A goroutine calls it while it waits
// for a helper another goroutine is computing, and once no plan is left, until spare
// reports false; so when EvalParallelSpare returns, spare has no work left. The plans'
// goroutines stay as many as workers: the spare work fills the time they would wait,
// rather than competing with them for processors.
func (p *Program) EvalParallelSpare(ctx context.Context, input, data ast.Value, plans []int, workers int, spare func() bool) ([]ResultSet, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	workers = min(workers, len(plans))
	if workers <= 1 {
		rs, err := p.Eval(ctx, input, data, plans)
		drain(ctx, spare)
		if err == nil && spare != nil {
			err = ctx.Err() // the spare work may be unfinished
		}
		return rs, err
	}
	for _, idx := range plans {
		if idx < 0 || idx >= len(p.plans) {
			return nil, fmt.Errorf("evaluating plan %d: the policy has %d plans", idx, len(p.plans))
		}
	}
	sh := &shared{memo: make([]sharedEntry, len(p.funcs)), indexes: map[indexKey]*scanIndex{}, spare: spare}
	out := make([]ResultSet, len(plans))
	errs := make([]error, workers)
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer drain(ctx, spare)
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
	if spare != nil {
		if err := ctx.Err(); err != nil {
			return nil, err // the spare work may be unfinished
		}
	}
	return out, nil
}

// drain runs spare work until there is none left or ctx ends.
func drain(ctx context.Context, spare func() bool) {
	if spare == nil {
		return
	}
	for ctx.Err() == nil && spare() {
	}
}

// await waits for done, running spare work meanwhile. It reports false if ctx ended first.
func await(ctx context.Context, done <-chan struct{}, spare func() bool) bool {
	for spare != nil {
		select {
		case <-done:
			return true
		case <-ctx.Done():
			return false
		default:
		}
		if !spare() {
			break
		}
	}
	select {
	case <-done:
		return true
	case <-ctx.Done():
		return false
	}
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
		if !await(s.ctx, done, sh.spare) {
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
