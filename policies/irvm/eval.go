package irvm

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/topdown"
	"github.com/open-policy-agent/opa/v1/topdown/builtins"
)

// Control flow results of running a block. A value >= 0 is a break: the block ended
// early and that many enclosing blocks end with it (0 ends only this block, as an
// undefined statement does).
const (
	flowNext   = -1 // the block ran to its end
	flowReturn = -2 // a ReturnLocalStmt ran; state.ret holds the value
	flowError  = -3 // evaluation failed; state.err holds the error
)

// ctxCheckEvery is how many scan iterations run between checks for a cancelled context.
const ctxCheckEvery = 4096

// state is one evaluation's working memory, pooled by the Program.
type state struct {
	prog  *Program
	ctx   context.Context
	stack []*ast.Term
	sp    int
	// hw is the highest sp since the last release.
	hw int
	// memo holds, per function index, the memoized result of two-parameter functions:
	// one frame per WithStmt nesting level, the first reused across evaluations.
	memo [][]memoEntry
	// results collects the values the current plan adds.
	results ResultSet
	ret     *ast.Term
	err     error
	bctx    topdown.BuiltinContext
	cache   builtins.Cache
	cancel  ctxCancel
	out     *ast.Term
	outIter func(*ast.Term) error
	args    []*ast.Term
	// indexes caches the scan indexes of this evaluation (see scanindex.go).
	indexes map[indexKey]*scanIndex
	// ticks counts scan iterations (for the context check, and tests).
	ticks int
	// shared, in a parallel evaluation, holds what the goroutines share.
	shared *shared
	// ints holds the terms of the integers 0, 1, … that intTerm has needed, kept across
	// evaluations (terms are immutable).
	ints []*ast.Term
}

// ctxCancel tells builtins that check for cancellation (long generators such as
// net.cidr_expand) that the evaluation's context is done; they then end it with a
// topdown.Halt, as under topdown.
type ctxCancel struct {
	ctx context.Context
}

// Cancel does nothing: the evaluation is cancelled through its context.
func (c *ctxCancel) Cancel() {}

// Cancelled reports whether the evaluation's context is done.
func (c *ctxCancel) Cancelled() bool { return c.ctx != nil && c.ctx.Err() != nil }

type memoEntry struct {
	done  bool
	value *ast.Term
}

func newState(p *Program) *state {
	s := &state{prog: p, stack: make([]*ast.Term, 1024)}
	s.memo = [][]memoEntry{make([]memoEntry, len(p.funcs))}
	s.outIter = func(t *ast.Term) error {
		s.out = t
		return nil
	}
	return s
}

func (s *state) reset(ctx context.Context) {
	s.ctx = ctx
	s.sp = 0
	s.memo = s.memo[:1]
	clear(s.memo[0])
	s.err, s.ret, s.results = nil, nil, ResultSet{}
	s.indexes = nil
	// The builtin cache is per evaluation, as in topdown; the map is reused.
	if s.cache == nil {
		s.cache = builtins.Cache{}
	}
	clear(s.cache)
	s.cancel.ctx = ctx
	s.bctx = topdown.BuiltinContext{
		Context: ctx,
		Cancel:  &s.cancel,
		Time:    ast.NewTerm(ast.Number(strconv.FormatInt(time.Now().UnixNano(), 10))),
		Cache:   s.cache,
	}
}

// release drops the references an evaluation left, so a pooled state pins no plan.
func (s *state) release() {
	clear(s.stack[:s.hw])
	s.hw = 0
	s.ctx, s.results, s.ret, s.indexes, s.out, s.shared = nil, ResultSet{}, nil, nil, nil, nil
	s.bctx = topdown.BuiltinContext{}
	s.cancel.ctx = nil
	clear(s.cache)
	clear(s.args[:cap(s.args)])
	clear(s.memo[0])
}

// Eval evaluates the plans at the given indexes (see Plan) on input and data, sharing
// one evaluation (so memoized rules are computed once for all of them), and returns
// each plan's result set. An undefined input is nil.
func (p *Program) Eval(ctx context.Context, input, data ast.Value, plans []int) ([]ResultSet, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s := p.states.Get().(*state)
	defer func() {
		s.release()
		p.states.Put(s)
	}()
	return p.eval(ctx, s, input, data, plans)
}

func (p *Program) eval(ctx context.Context, s *state, input, data ast.Value, plans []int) ([]ResultSet, error) {
	s.reset(ctx)
	var in, dt *ast.Term
	if input != nil {
		in = ast.NewTerm(input)
	}
	if data != nil {
		dt = ast.NewTerm(data)
	}
	out := make([]ResultSet, len(plans))
	for i, idx := range plans {
		if idx < 0 || idx >= len(p.plans) {
			return nil, fmt.Errorf("evaluating plan %d: the policy has %d plans", idx, len(p.plans))
		}
		pl := p.plans[idx]
		s.results = ResultSet{}
		frame := s.push(pl.nlocals)
		frame[pl.params[0]], frame[pl.params[1]] = in, dt
		for _, b := range pl.blocks {
			r := s.block(frame, b)
			if r == flowError {
				return nil, fmt.Errorf("evaluating %s: %w", pl.name, s.err)
			}
			if r == flowReturn {
				break
			}
			if r > 0 {
				return nil, fmt.Errorf("evaluating %s: a break leaves the plan (malformed IR)", pl.name)
			}
		}
		s.pop(pl.nlocals)
		out[i] = s.results
	}
	return out, nil
}

// push allocates a zeroed frame of n locals. Growing the stack leaves earlier frames in
// the old array, which their owners keep using: frames never move.
func (s *state) push(n int) []*ast.Term {
	if s.sp+n > len(s.stack) {
		s.stack = make([]*ast.Term, max(2*len(s.stack), s.sp+n))
	}
	f := s.stack[s.sp : s.sp+n : s.sp+n]
	clear(f)
	s.sp += n
	s.hw = max(s.hw, s.sp)
	return f
}

func (s *state) pop(n int) { s.sp -= n }

func (s *state) fail(err error) int {
	s.err = err
	return flowError
}

// malformed reports IR the planner never produces (for example appending to a local that
// holds no array).
func (s *state) malformed(st *stmt, format string, a ...any) int {
	return s.fail(fmt.Errorf("malformed IR at %s: %s", s.where(st), fmt.Sprintf(format, a...)))
}

func (s *state) where(st *stmt) string {
	file := ""
	if st.loc.File >= 0 && st.loc.File < len(s.prog.files) {
		file = s.prog.files[st.loc.File]
	}
	return fmt.Sprintf("%s:%d:%d", file, st.loc.Row, st.loc.Col)
}

func (s *state) location(st *stmt) *ast.Location {
	loc := &ast.Location{Row: st.loc.Row, Col: st.loc.Col}
	if st.loc.File >= 0 && st.loc.File < len(s.prog.files) {
		loc.File = s.prog.files[st.loc.File]
	}
	return loc
}

func get(f []*ast.Term, o *operand) *ast.Term {
	if o.term != nil {
		return o.term
	}
	return f[o.local]
}

// equal is value equality as OPA compares values (1 equals 1.0).
func equal(a, b *ast.Term) bool {
	if a == b {
		return true
	}
	if x, ok := a.Value.(ast.String); ok {
		y, ok := b.Value.(ast.String)
		return ok && x == y
	}
	return ast.Compare(a.Value, b.Value) == 0
}

// nested maps the result of a nested block (of BlockStmt, NotStmt or WithStmt) to the
// enclosing block's: a break of k > 0 levels ends the enclosing block with k-1.
func nested(r int) int {
	if r > 0 {
		return r - 1
	}
	return r
}

// block runs the statements of b over frame f.
func (s *state) block(f []*ast.Term, b *block) int {
	for i := range b.stmts {
		st := &b.stmts[i]
		switch st.op {
		case opArrayAppend:
			t := f[st.target]
			arr, ok := termValue(t).(*ast.Array)
			v := get(f, &st.a)
			if !ok || v == nil {
				return s.malformed(st, "ArrayAppend to a local without an array or of an undefined value")
			}
			// The array is being built (MakeArray made its term): it grows in place, as
			// the Wasm runtime's arrays do.
			t.Value = arr.Append(v)
		case opAssignInt, opMakeNumber, opAssignConst:
			f[st.target] = st.term
		case opAssignVar:
			f[st.target] = get(f, &st.a)
		case opAssignVarOnce:
			v := get(f, &st.a)
			if cur := f[st.target]; cur != nil && (v == nil || !equal(cur, v)) {
				return s.fail(&topdown.Error{Code: topdown.ConflictErr, Location: s.location(st), Message: "complete rules must not produce multiple outputs"})
			}
			f[st.target] = v
		case opBlock:
			for _, sub := range st.blocks {
				if r := s.block(f, sub); r < flowNext || r > 0 {
					return nested(r)
				}
			}
		case opBreak:
			return st.index
		case opCall:
			v, r := s.call(f, st.index, st.args)
			if r != flowNext {
				return r
			}
			if v == nil {
				return 0
			}
			f[st.target] = v
		case opCallBuiltin:
			v, r := s.callBuiltin(f, st)
			if r != flowNext {
				return r
			}
			if v == nil {
				return 0
			}
			f[st.target] = v
		case opCallDynamic:
			if r := s.callDynamic(f, st); r != flowNext {
				return r
			}
		case opDot:
			v := dot(get(f, &st.a), get(f, &st.b))
			if v == nil {
				return 0
			}
			f[st.target] = v
		case opEqual:
			a, b := get(f, &st.a), get(f, &st.b)
			if a == nil || b == nil || !equal(a, b) {
				return 0
			}
		case opNotEqual:
			a, b := get(f, &st.a), get(f, &st.b)
			if a == nil || b == nil || equal(a, b) {
				return 0
			}
		case opIsArray:
			if _, ok := termValue(get(f, &st.a)).(*ast.Array); !ok {
				return 0
			}
		case opIsObject:
			if _, ok := termValue(get(f, &st.a)).(ast.Object); !ok {
				return 0
			}
		case opIsSet:
			if _, ok := termValue(get(f, &st.a)).(ast.Set); !ok {
				return 0
			}
		case opIsDefined:
			if f[st.target] == nil {
				return 0
			}
		case opIsUndefined:
			if f[st.target] != nil {
				return 0
			}
		case opLen:
			n, ok := length(get(f, &st.a))
			if !ok {
				return s.malformed(st, "Len of an undefined value")
			}
			f[st.target] = s.intTerm(n)
		case opMakeArray:
			f[st.target] = ast.NewTerm(ast.NewArray(make([]*ast.Term, 0, st.index)...))
		case opMakeNull:
			f[st.target] = ast.InternedNullTerm
		case opMakeObject:
			f[st.target] = ast.NewTerm(ast.NewObject())
		case opMakeSet:
			f[st.target] = ast.NewTerm(ast.NewSet())
		case opNop:
		case opNot:
			switch r := s.block(f, st.block); {
			case r == flowNext:
				return 0 // the negated block held: the NotStmt is undefined
			case r < flowNext || r > 0:
				return nested(r)
			}
		case opObjectInsert, opObjectInsertOnce:
			obj, ok := termValue(f[st.target]).(ast.Object)
			k, v := get(f, &st.b), get(f, &st.a)
			if !ok || k == nil || v == nil {
				return s.malformed(st, "ObjectInsert into a local without an object or of an undefined key or value")
			}
			// Replacing a key's value makes OPA rehash the whole object: an equal value is
			// left in place instead (the same object either way).
			if cur := obj.Get(k); cur != nil {
				if equal(cur, v) {
					break
				}
				if st.op == opObjectInsertOnce {
					return s.fail(&topdown.Error{Code: topdown.ConflictErr, Location: s.location(st), Message: "object keys must be unique"})
				}
			}
			obj.Insert(k, v)
		case opObjectMerge:
			v, err := merge(f[st.key], f[st.value])
			if err != nil {
				return s.fail(&topdown.Error{Code: topdown.ConflictErr, Location: s.location(st), Message: err.Error()})
			}
			f[st.target] = v
		case opResetLocal:
			f[st.target] = nil
		case opResultSetAdd:
			v := f[st.target]
			if v == nil {
				return s.malformed(st, "ResultSetAdd of an undefined value")
			}
			s.results.add(v, false)
		case opResultValue:
			v := get(f, &st.a)
			if v == nil {
				return s.malformed(st, "ResultSetAdd of an undefined value")
			}
			s.results.add(v, true)
		case opReturnLocal:
			s.ret = f[st.target]
			return flowReturn
		case opScan:
			if r := s.scan(f, st); r != flowNext {
				return r
			}
		case opSetAdd:
			set, ok := termValue(f[st.target]).(ast.Set)
			v := get(f, &st.a)
			if !ok || v == nil {
				return s.malformed(st, "SetAdd to a local without a set or of an undefined value")
			}
			set.Add(v)
		case opWith:
			if r := s.with(f, st); r != flowNext {
				return r
			}
		default:
			return s.malformed(st, "unknown opcode %d", st.op)
		}
	}
	return flowNext
}

func termValue(t *ast.Term) ast.Value {
	if t == nil {
		return nil
	}
	return t.Value
}

// dot looks key up in src: an object's value, an array's element at an integer index, a
// set's element; nil (undefined) for anything else.
func dot(src, key *ast.Term) *ast.Term {
	if src == nil || key == nil {
		return nil
	}
	switch v := src.Value.(type) {
	case ast.Object:
		return v.Get(key)
	case *ast.Array:
		n, ok := key.Value.(ast.Number)
		if !ok {
			return nil
		}
		i, ok := n.Int()
		if !ok || i < 0 || i >= v.Len() {
			return nil
		}
		return v.Elem(i)
	case ast.Set:
		if v.Contains(key) {
			return key
		}
	}
	return nil
}

// length is the LenStmt value: elements of a collection, bytes of a string (as the Wasm
// runtime counts), 0 for other scalars.
func length(t *ast.Term) (int, bool) {
	if t == nil {
		return 0, false
	}
	switch v := t.Value.(type) {
	case *ast.Array:
		return v.Len(), true
	case ast.Object:
		return v.Len(), true
	case ast.Set:
		return v.Len(), true
	case ast.String:
		return len(v), true
	}
	return 0, true
}

// merge is ObjectMergeStmt: a recursive merge of two objects, where an undefined side
// yields the other.
func merge(a, b *ast.Term) (*ast.Term, error) {
	if a == nil {
		return b, nil
	}
	if b == nil {
		return a, nil
	}
	x, okA := a.Value.(ast.Object)
	y, okB := b.Value.(ast.Object)
	if !okA || !okB {
		return nil, errors.New("real and replacement data could not be merged: both must be objects")
	}
	m, ok := x.Merge(y)
	if !ok {
		return nil, errors.New("real and replacement data could not be merged")
	}
	return ast.NewTerm(m), nil
}

// call runs planned function fi with the given arguments; a nil result is undefined.
func (s *state) call(f []*ast.Term, fi int, args []operand) (*ast.Term, int) {
	fn := s.prog.funcs[fi]
	if !fn.memo {
		return s.invoke(f, fi, args)
	}
	memo := s.memo[len(s.memo)-1]
	if memo[fi].done {
		return memo[fi].value, flowNext
	}
	var (
		v *ast.Term
		r int
	)
	if s.shared != nil && len(s.memo) == 1 {
		// The shared result is kept in this goroutine's memo too: later calls need no
		// lock or channel.
		v, r = s.sharedCall(f, fi, args)
	} else {
		v, r = s.invoke(f, fi, args)
	}
	if r == flowNext {
		memo[fi] = memoEntry{done: true, value: v}
	}
	return v, r
}

// invoke runs function fi on a new frame.
func (s *state) invoke(f []*ast.Term, fi int, args []operand) (*ast.Term, int) {
	fn := s.prog.funcs[fi]
	frame := s.push(fn.nlocals)
	for i, p := range fn.params {
		frame[p] = get(f, &args[i])
	}
	v, r := s.run(fn, frame)
	s.pop(fn.nlocals)
	if r != flowNext {
		return nil, r
	}
	return v, flowNext
}

// run executes a function's blocks in order until one returns.
func (s *state) run(fn *function, frame []*ast.Term) (*ast.Term, int) {
	for _, b := range fn.blocks {
		switch r := s.block(frame, b); {
		case r == flowReturn:
			v := s.ret
			s.ret = nil
			return v, flowNext
		case r == flowError:
			return nil, r
		case r > 0:
			return nil, s.fail(fmt.Errorf("malformed IR: a break leaves function %s", fn.name))
		}
	}
	return nil, flowNext
}

// callBuiltin calls OPA's implementation of a builtin. As in topdown (non-strict), a
// builtin's error makes the call undefined, except a topdown.Halt, which ends the
// evaluation.
func (s *state) callBuiltin(f []*ast.Term, st *stmt) (*ast.Term, int) {
	args := s.args[:0]
	for i := range st.args {
		v := get(f, &st.args[i])
		if v == nil {
			return nil, s.malformed(st, "builtin %s called with an undefined argument", st.builtin.name)
		}
		args = append(args, v)
	}
	s.args = args
	if st.builtin.fast != nil {
		if v, ok := st.builtin.fast(args); ok {
			return v, flowNext
		}
	}
	s.out = nil
	s.bctx.Location = nil
	err := st.builtin.fn(s.bctx, args, s.outIter)
	if err != nil {
		var halt topdown.Halt
		if errors.As(err, &halt) {
			return nil, s.fail(halt.Err)
		}
		return nil, flowNext
	}
	v := s.out
	s.out = nil
	return v, flowNext
}

// callDynamic is CallDynamicStmt: the function at a data path computed at run time. A
// path naming no function ends the block (the planner then reads the data document); a
// function found but undefined ends three blocks, as the Wasm compiler does.
func (s *state) callDynamic(f []*ast.Term, st *stmt) int {
	parts := make([]string, len(st.dynPath))
	for i := range st.dynPath {
		str, ok := termValue(get(f, &st.dynPath[i])).(ast.String)
		if !ok {
			return 0
		}
		parts[i] = string(str)
	}
	fi, ok := s.prog.dynamic[strings.Join(parts, "/")]
	if !ok {
		return 0
	}
	fn := s.prog.funcs[fi]
	if len(fn.params) != len(st.dynArgs) {
		return s.malformed(st, "dynamic call of %s with %d arguments, it takes %d", fn.name, len(st.dynArgs), len(fn.params))
	}
	args := make([]operand, len(st.dynArgs))
	for i, a := range st.dynArgs {
		args[i] = operand{local: a}
	}
	v, r := s.call(f, fi, args)
	if r != flowNext {
		return r
	}
	if v == nil {
		return 3
	}
	f[st.target] = v
	return flowNext
}

// with is WithStmt: the local (or the part of it at path) replaced by a value while the
// block runs, with a fresh memoization frame.
func (s *state) with(f []*ast.Term, st *stmt) int {
	saved := f[st.target]
	v := get(f, &st.a)
	if v == nil {
		return s.malformed(st, "With of an undefined value")
	}
	if len(st.path) == 0 {
		f[st.target] = v
	} else {
		f[st.target] = upsert(saved, st.path, v)
	}
	s.memo = append(s.memo, make([]memoEntry, len(s.prog.funcs)))
	r := s.block(f, st.block)
	s.memo = s.memo[:len(s.memo)-1]
	f[st.target] = saved
	if r == flowNext {
		return flowNext
	}
	return nested(r)
}

// upsert returns a copy of base (an object, or a new one) with value at path, copying the
// objects along the path and replacing non-objects by objects.
func upsert(base *ast.Term, path []*ast.Term, value *ast.Term) *ast.Term {
	root := shallowCopy(base)
	cur := root
	for _, k := range path[:len(path)-1] {
		next := shallowCopy(cur.Get(k))
		cur.Insert(k, ast.NewTerm(next))
		cur = next
	}
	cur.Insert(path[len(path)-1], value)
	return ast.NewTerm(root)
}

// shallowCopy copies an object's top level; anything else gives a new empty object.
func shallowCopy(t *ast.Term) ast.Object {
	out := ast.NewObject()
	if obj, ok := termValue(t).(ast.Object); ok {
		obj.Foreach(func(k, v *ast.Term) { out.Insert(k, v) })
	}
	return out
}

// scan is ScanStmt: the block once per element of a collection (none for a scalar). In
// the block, a break of 0 ends the iteration, of 1 the scan, of k > 1 ends k-2 blocks
// around the scan (the Wasm loop nests in a block).
func (s *state) scan(f []*ast.Term, st *stmt) int {
	src := f[st.target]
	if src == nil {
		return flowNext
	}
	if st.scan != nil && !s.prog.noScanIndex {
		if r, done := s.indexedScan(f, st, src); done {
			return r
		}
	}
	switch v := src.Value.(type) {
	case *ast.Array:
		for i := 0; i < v.Len(); i++ {
			if r, stop := s.iteration(f, st, s.intTerm(i), v.Elem(i)); stop {
				return r
			}
		}
	case ast.Object:
		// In key order, as Keys would give them, without a lookup per key.
		r, stop := flowNext, false
		v.Until(func(k, val *ast.Term) bool {
			r, stop = s.iteration(f, st, k, val)
			return stop
		})
		if stop {
			return r
		}
	case ast.Set:
		for _, e := range v.Slice() {
			if r, stop := s.iteration(f, st, e, e); stop {
				return r
			}
		}
	}
	return flowNext
}

// maxIntTerms bounds state.ints.
const maxIntTerms = 1 << 17

// intTerm returns the term of integer i. OPA interns only small integers, so the index
// of each element of a big array would otherwise cost two allocations per scan.
func (s *state) intTerm(i int) *ast.Term {
	if i < 0 || i >= maxIntTerms {
		return ast.InternedTerm(i)
	}
	for len(s.ints) <= i {
		s.ints = append(s.ints, ast.InternedTerm(len(s.ints)))
	}
	return s.ints[i]
}

// iteration runs a scan's block on one element; stop reports that the scan ends with r.
func (s *state) iteration(f []*ast.Term, st *stmt, k, v *ast.Term) (int, bool) {
	s.ticks++
	if s.ticks%ctxCheckEvery == 0 {
		if err := s.ctx.Err(); err != nil {
			return s.fail(err), true
		}
	}
	f[st.key], f[st.value] = k, v
	switch r := s.block(f, st.block); {
	case r == flowNext || r == 0:
		return flowNext, false
	case r == 1:
		return flowNext, true
	case r > 1:
		return r - 2, true
	default:
		return r, true
	}
}
