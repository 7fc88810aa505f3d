// Package irvm runs a Rego policy compiled by OPA's planner (an ir.Policy, the input of
// OPA's Wasm compiler) over ast values, calling OPA's own builtin implementations. It is
// an interpreter for the IR: every statement kind of package ir is implemented with the
// semantics the Wasm compiler gives it (an undefined statement ends its block, BreakStmt
// leaves Index+1 enclosing blocks, functions with exactly the two parameters input and
// data are memoized per evaluation). On top of the IR it adds one optimisation the IR
// lacks: scans that filter an immutable collection by equality with an outer value are
// served from a hash index built once per evaluation (see scanindex.go).
package irvm

import (
	"fmt"
	"strings"
	"sync"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/ir"
	"github.com/open-policy-agent/opa/v1/topdown"
)

// Program is a loaded ir.Policy, ready to evaluate. It is immutable and safe for
// concurrent use.
type Program struct {
	plans     []*function
	planIndex map[string]int
	funcs     []*function
	// dynamic maps a function's data path, joined by "/", to its index (CallDynamicStmt).
	dynamic map[string]int
	files   []string
	// noScanIndex turns the scan index off (tests compare both ways).
	noScanIndex bool
	states      sync.Pool
}

// function is a planned function or plan: its blocks over a frame of locals.
type function struct {
	name    string
	params  []int
	ret     int
	blocks  []*block
	nlocals int
	// memo is true for functions of exactly two parameters (input and data): their
	// result depends on nothing else, so it is computed once per evaluation.
	memo bool
	// path is the data path of the function (for CallDynamicStmt), or nil.
	path []string
}

type block struct {
	stmts []stmt
}

type opcode uint8

const (
	opArrayAppend opcode = iota
	opAssignInt
	opAssignVar
	opAssignVarOnce
	opBlock
	opBreak
	opCall
	opCallBuiltin
	opCallDynamic
	opDot
	opEqual
	opIsArray
	opIsDefined
	opIsObject
	opIsSet
	opIsUndefined
	opLen
	opMakeArray
	opMakeNull
	opMakeNumber
	opMakeObject
	opMakeSet
	opNop
	opNot
	opNotEqual
	opObjectInsert
	opObjectInsertOnce
	opObjectMerge
	opResetLocal
	opResultSetAdd
	opReturnLocal
	opScan
	opSetAdd
	opWith
	// opResultValue adds a rule value to an entrypoint's result set, unwrapped (see
	// results.go); Load makes it from three IR statements.
	opResultValue
	// opAssignConst assigns a collection built at load from constants (see constfold.go);
	// Load makes it from the statements that build the collection.
	opAssignConst
)

// operand is a local (term nil) or a constant (term set: a string or boolean constant).
type operand struct {
	local int
	term  *ast.Term
}

// stmt is one statement, its operands resolved at load time. The fields used depend on
// op; the comments name the ir statement fields they hold.
type stmt struct {
	op opcode
	// a and b: Source/Key, A/B, Value/Key operands.
	a, b operand
	// target: Target, Result, Array, Object, Set, Local (WithStmt) or Source local.
	target int
	// key and value: ScanStmt Key/Value locals; ObjectMergeStmt A/B locals.
	key, value int
	// index: BreakStmt Index; CallStmt function index.
	index int
	// term: a constant built at load (MakeNumberRef, MakeNumberInt, AssignInt, opAssignConst).
	term   *ast.Term
	block  *block
	blocks []*block
	args   []operand
	// builtin is the topdown implementation of a builtin CallStmt.
	builtin *builtinCall
	// path: WithStmt path (string terms) or CallDynamicStmt path operands.
	path    []*ast.Term
	dynPath []operand
	// dynArgs: CallDynamicStmt argument locals.
	dynArgs []int
	// scan is the index plan of a ScanStmt whose block filters by equality, or nil.
	scan *scanFilter
	loc  ir.Location
}

// builtinCall is a builtin function called by a CallStmt.
type builtinCall struct {
	name string
	fn   topdown.BuiltinFunc
	// fast, when set, computes the builtin's result for common operands without OPA's
	// general path (the same value; ok false means: call fn).
	fast func(args []*ast.Term) (*ast.Term, bool)
}

// newBuiltinCall looks a builtin up in OPA, or returns nil.
func newBuiltinCall(name string) *builtinCall {
	fn := topdown.GetBuiltin(name)
	if fn == nil {
		return nil
	}
	return &builtinCall{name: name, fn: fn, fast: fastBuiltins(name)}
}

// Load prepares policy for evaluation: it resolves every operand, function and builtin,
// and fails on a statement or builtin it does not know, so that evaluation never meets
// one.
func Load(policy *ir.Policy) (*Program, error) {
	if policy == nil || policy.Static == nil || policy.Plans == nil {
		return nil, fmt.Errorf("loading IR policy: the policy has no static section or no plans")
	}
	l := &loader{policy: policy, funcIndex: map[string]int{}, builtins: map[string]*builtinCall{}}
	for _, s := range policy.Static.Strings {
		l.strings = append(l.strings, ast.StringTerm(s.Value))
	}
	for _, b := range policy.Static.BuiltinFuncs {
		bc := newBuiltinCall(b.Name)
		if bc == nil {
			return nil, fmt.Errorf("loading IR policy: builtin %s has no OPA implementation", b.Name)
		}
		l.builtins[b.Name] = bc
	}
	p := &Program{planIndex: map[string]int{}, dynamic: map[string]int{}}
	for _, f := range policy.Static.Files {
		p.files = append(p.files, f.Value)
	}
	if policy.Funcs != nil {
		for i, f := range policy.Funcs.Funcs {
			if _, dup := l.funcIndex[f.Name]; dup {
				return nil, fmt.Errorf("loading IR policy: function %s is defined twice", f.Name)
			}
			l.funcIndex[f.Name] = i
		}
		for _, f := range policy.Funcs.Funcs {
			if len(f.Params) == 0 {
				return nil, fmt.Errorf("loading IR policy: function %s has no parameters (input and data come first)", f.Name)
			}
			fn := &function{name: f.Name, params: localsOf(f.Params), ret: int(f.Return), memo: len(f.Params) == 2, path: f.Path}
			if err := l.function(fn, f.Blocks); err != nil {
				return nil, err
			}
			p.funcs = append(p.funcs, fn)
			if f.Path != nil {
				p.dynamic[strings.Join(f.Path, "/")] = len(p.funcs) - 1
			}
		}
	}
	for i, pl := range policy.Plans.Plans {
		fn := &function{name: pl.Name, params: []int{int(ir.Input), int(ir.Data)}, ret: -1}
		if err := l.function(fn, pl.Blocks); err != nil {
			return nil, err
		}
		unwrapResults(fn)
		p.plans = append(p.plans, fn)
		p.planIndex[pl.Name] = i
	}
	if !mutatesParams(p) {
		for _, fn := range p.funcs {
			foldConstants(fn)
		}
		for _, fn := range p.plans {
			foldConstants(fn)
		}
	}
	p.states.New = func() any { return newState(p) }
	return p, nil
}

// mutatesParams reports whether a function adds to a collection it was passed: then a
// constant collection passed to it could change, so foldConstants is not applied. (The
// planner makes a new collection for everything it builds; this guards the assumption.)
func mutatesParams(p *Program) bool {
	for _, fn := range p.funcs {
		params := map[int]bool{}
		for _, l := range fn.params {
			params[l] = true
		}
		found := false
		for _, b := range fn.blocks {
			walkStmts(b, func(st *stmt) {
				switch st.op {
				case opArrayAppend, opSetAdd, opObjectInsert, opObjectInsertOnce:
					found = found || params[st.target]
				}
			})
		}
		if found {
			return true
		}
	}
	return false
}

// Plans lists the names of the plans (the entrypoints), in the policy's order.
func (p *Program) Plans() []string {
	names := make([]string, len(p.plans))
	for i, pl := range p.plans {
		names[i] = pl.name
	}
	return names
}

// Plan returns the index of the plan named name (an entrypoint such as "pkg/rule").
func (p *Program) Plan(name string) (int, bool) {
	i, ok := p.planIndex[name]
	return i, ok
}

func localsOf(ls []ir.Local) []int {
	out := make([]int, len(ls))
	for i, l := range ls {
		out[i] = int(l)
	}
	return out
}

// loader converts ir statements into stmts.
type loader struct {
	policy    *ir.Policy
	strings   []*ast.Term
	funcIndex map[string]int
	builtins  map[string]*builtinCall
	// maxLocal is the largest local the function being loaded uses.
	maxLocal int
}

func (l *loader) function(fn *function, blocks []*ir.Block) error {
	l.maxLocal = max(int(ir.Data), fn.ret)
	for _, p := range fn.params {
		l.local(ir.Local(p))
	}
	for i, b := range blocks {
		lb, err := l.block(b)
		if err != nil {
			return fmt.Errorf("loading IR policy: %s, block %d: %w", fn.name, i, err)
		}
		fn.blocks = append(fn.blocks, lb)
	}
	fn.nlocals = l.maxLocal + 1
	analyseScans(fn)
	return nil
}

func (l *loader) local(x ir.Local) int {
	l.maxLocal = max(l.maxLocal, int(x))
	return int(x)
}

func (l *loader) operand(o ir.Operand) (operand, error) {
	switch v := o.Value.(type) {
	case *ir.Local:
		return l.operand(ir.Operand{Value: *v})
	case *ir.StringIndex:
		return l.operand(ir.Operand{Value: *v})
	case *ir.Bool:
		return l.operand(ir.Operand{Value: *v})
	case ir.Local:
		return operand{local: l.local(v)}, nil
	case ir.StringIndex:
		if int(v) < 0 || int(v) >= len(l.strings) {
			return operand{}, fmt.Errorf("string constant %d out of range (%d strings)", v, len(l.strings))
		}
		return operand{local: -1, term: l.strings[v]}, nil
	case ir.Bool:
		return operand{local: -1, term: ast.InternedTerm(bool(v))}, nil
	}
	return operand{}, fmt.Errorf("operand of unknown kind %T", o.Value)
}

func (l *loader) operands(os []ir.Operand) ([]operand, error) {
	out := make([]operand, len(os))
	for i, o := range os {
		var err error
		if out[i], err = l.operand(o); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (l *loader) block(b *ir.Block) (*block, error) {
	out := &block{stmts: make([]stmt, 0, len(b.Stmts))}
	for _, s := range b.Stmts {
		ls, err := l.stmt(s)
		if err != nil {
			return nil, err
		}
		if loc := s.GetLocation(); loc != nil {
			ls.loc = *loc
		}
		out.stmts = append(out.stmts, ls)
	}
	return out, nil
}

func (l *loader) blockList(bs []*ir.Block) ([]*block, error) {
	out := make([]*block, len(bs))
	for i, b := range bs {
		var err error
		if out[i], err = l.block(b); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// stmt converts one statement. Operand errors are collected in err.
func (l *loader) stmt(s ir.Stmt) (stmt, error) {
	var err error
	op := func(o ir.Operand) operand {
		v, e := l.operand(o)
		if e != nil && err == nil {
			err = e
		}
		return v
	}
	var out stmt
	switch s := s.(type) {
	case *ir.ArrayAppendStmt:
		out = stmt{op: opArrayAppend, a: op(s.Value), target: l.local(s.Array)}
	case *ir.AssignIntStmt:
		out = stmt{op: opAssignInt, term: ast.InternedTerm(s.Value), target: l.local(s.Target)}
	case *ir.AssignVarStmt:
		out = stmt{op: opAssignVar, a: op(s.Source), target: l.local(s.Target)}
	case *ir.AssignVarOnceStmt:
		out = stmt{op: opAssignVarOnce, a: op(s.Source), target: l.local(s.Target)}
	case *ir.BlockStmt:
		bs, e := l.blockList(s.Blocks)
		if e != nil {
			return stmt{}, e
		}
		out = stmt{op: opBlock, blocks: bs}
	case *ir.BreakStmt:
		out = stmt{op: opBreak, index: int(s.Index)}
	case *ir.CallStmt:
		args, e := l.operands(s.Args)
		if e != nil {
			return stmt{}, e
		}
		if i, ok := l.funcIndex[s.Func]; ok {
			f := l.policy.Funcs.Funcs[i]
			if len(f.Params) != len(args) {
				return stmt{}, fmt.Errorf("call of %s with %d arguments, it takes %d", s.Func, len(args), len(f.Params))
			}
			out = stmt{op: opCall, index: i, args: args, target: l.local(s.Result)}
		} else if b, ok := l.builtins[s.Func]; ok {
			out = stmt{op: opCallBuiltin, builtin: b, args: args, target: l.local(s.Result)}
		} else if b := newBuiltinCall(s.Func); b != nil {
			// Builtins are normally declared in Static.BuiltinFuncs; accept an undeclared
			// one OPA implements.
			l.builtins[s.Func] = b
			out = stmt{op: opCallBuiltin, builtin: b, args: args, target: l.local(s.Result)}
		} else {
			return stmt{}, fmt.Errorf("call of %s: neither a planned function nor an OPA builtin", s.Func)
		}
	case *ir.CallDynamicStmt:
		path, e := l.operands(s.Path)
		if e != nil {
			return stmt{}, e
		}
		args := make([]int, len(s.Args))
		for i, a := range s.Args {
			args[i] = l.local(a)
		}
		out = stmt{op: opCallDynamic, dynPath: path, dynArgs: args, target: l.local(s.Result)}
	case *ir.DotStmt:
		out = stmt{op: opDot, a: op(s.Source), b: op(s.Key), target: l.local(s.Target)}
	case *ir.EqualStmt:
		out = stmt{op: opEqual, a: op(s.A), b: op(s.B)}
	case *ir.NotEqualStmt:
		out = stmt{op: opNotEqual, a: op(s.A), b: op(s.B)}
	case *ir.IsArrayStmt:
		out = stmt{op: opIsArray, a: op(s.Source)}
	case *ir.IsObjectStmt:
		out = stmt{op: opIsObject, a: op(s.Source)}
	case *ir.IsSetStmt:
		out = stmt{op: opIsSet, a: op(s.Source)}
	case *ir.IsDefinedStmt:
		out = stmt{op: opIsDefined, target: l.local(s.Source)}
	case *ir.IsUndefinedStmt:
		out = stmt{op: opIsUndefined, target: l.local(s.Source)}
	case *ir.LenStmt:
		out = stmt{op: opLen, a: op(s.Source), target: l.local(s.Target)}
	case *ir.MakeArrayStmt:
		out = stmt{op: opMakeArray, index: int(s.Capacity), target: l.local(s.Target)}
	case *ir.MakeNullStmt:
		out = stmt{op: opMakeNull, target: l.local(s.Target)}
	case *ir.MakeNumberIntStmt:
		out = stmt{op: opMakeNumber, term: ast.InternedTerm(s.Value), target: l.local(s.Target)}
	case *ir.MakeNumberRefStmt:
		if s.Index < 0 || s.Index >= len(l.strings) {
			return stmt{}, fmt.Errorf("number constant %d out of range (%d strings)", s.Index, len(l.strings))
		}
		str := string(l.strings[s.Index].Value.(ast.String))
		t := ast.InternedIntNumberTermFromString(str)
		if t == nil {
			t = ast.NewTerm(ast.Number(str))
		}
		out = stmt{op: opMakeNumber, term: t, target: l.local(s.Target)}
	case *ir.MakeObjectStmt:
		out = stmt{op: opMakeObject, target: l.local(s.Target)}
	case *ir.MakeSetStmt:
		out = stmt{op: opMakeSet, target: l.local(s.Target)}
	case *ir.NopStmt:
		out = stmt{op: opNop}
	case *ir.NotStmt:
		b, e := l.block(s.Block)
		if e != nil {
			return stmt{}, e
		}
		out = stmt{op: opNot, block: b}
	case *ir.ObjectInsertStmt:
		out = stmt{op: opObjectInsert, b: op(s.Key), a: op(s.Value), target: l.local(s.Object)}
	case *ir.ObjectInsertOnceStmt:
		out = stmt{op: opObjectInsertOnce, b: op(s.Key), a: op(s.Value), target: l.local(s.Object)}
	case *ir.ObjectMergeStmt:
		out = stmt{op: opObjectMerge, key: l.local(s.A), value: l.local(s.B), target: l.local(s.Target)}
	case *ir.ResetLocalStmt:
		out = stmt{op: opResetLocal, target: l.local(s.Target)}
	case *ir.ResultSetAddStmt:
		out = stmt{op: opResultSetAdd, target: l.local(s.Value)}
	case *ir.ReturnLocalStmt:
		out = stmt{op: opReturnLocal, target: l.local(s.Source)}
	case *ir.ScanStmt:
		b, e := l.block(s.Block)
		if e != nil {
			return stmt{}, e
		}
		out = stmt{op: opScan, target: l.local(s.Source), key: l.local(s.Key), value: l.local(s.Value), block: b}
	case *ir.SetAddStmt:
		out = stmt{op: opSetAdd, a: op(s.Value), target: l.local(s.Set)}
	case *ir.WithStmt:
		b, e := l.block(s.Block)
		if e != nil {
			return stmt{}, e
		}
		path := make([]*ast.Term, len(s.Path))
		for i, idx := range s.Path {
			if idx < 0 || idx >= len(l.strings) {
				return stmt{}, fmt.Errorf("with path string %d out of range (%d strings)", idx, len(l.strings))
			}
			path[i] = l.strings[idx]
		}
		out = stmt{op: opWith, target: l.local(s.Local), path: path, a: op(s.Value), block: b}
	default:
		return stmt{}, fmt.Errorf("statement %T is not supported", s)
	}
	return out, err
}
