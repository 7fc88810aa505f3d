package irvm

import (
	"github.com/open-policy-agent/opa/v1/ast"
)

// An OPA entrypoint plan ends by wrapping the rule's value in an object and adding it to
// the result set:
//
//	MakeObjectStmt t; ObjectInsertStmt "result" x t; ResultSetAddStmt t
//
// Load replaces these three statements by one that adds x unwrapped (opResultValue), and
// a ResultSet builds the wrapper only when asked for the IR's result set (Terms): callers
// wanting the rule values (Values) skip an object per plan and evaluation, which for
// rules evaluated on every resource of a plan is a good part of their allocations.

// ResultSet is the result set of one plan: the distinct values its ResultSetAddStmts
// added, in the order added.
type ResultSet struct {
	entries []result
}

// result is one value of a result set: as added, or, for an entrypoint plan's wrapper,
// the rule value x of {"result": x}.
type result struct {
	value   *ast.Term
	wrapped bool
}

// resultKey is the key of the entrypoint wrapper, {"result": x}.
func resultKey() *ast.Term { return ast.InternedTerm("result") }

// Len is the number of values in the set.
func (rs ResultSet) Len() int { return len(rs.entries) }

// Terms are the values of the result set, as the IR defines them (for an entrypoint plan,
// objects {"result": rule value}).
func (rs ResultSet) Terms() []*ast.Term {
	out := make([]*ast.Term, len(rs.entries))
	for i, e := range rs.entries {
		out[i] = e.value
		if e.wrapped {
			out[i] = ast.ObjectTerm(ast.Item(resultKey(), e.value))
		}
	}
	return out
}

// Values are the rule values of an entrypoint plan's result set: each value's "result"
// field (values without one are left out).
func (rs ResultSet) Values() []*ast.Term {
	out := make([]*ast.Term, 0, len(rs.entries))
	for _, e := range rs.entries {
		if e.wrapped {
			out = append(out, e.value)
			continue
		}
		if obj, ok := e.value.Value.(ast.Object); ok {
			if v := obj.Get(resultKey()); v != nil {
				out = append(out, v)
			}
		}
	}
	return out
}

// add adds a value unless an equal one is in the set.
func (rs *ResultSet) add(v *ast.Term, wrapped bool) {
	for _, e := range rs.entries {
		if e.wrapped == wrapped && equal(e.value, v) {
			return
		}
	}
	rs.entries = append(rs.entries, result{value: v, wrapped: wrapped})
}

// unwrapResults applies the rewrite above to the blocks of a plan when the wrapper's local
// is used nowhere else.
func unwrapResults(fn *function) {
	uses := map[int]int{}
	for _, b := range fn.blocks {
		walkStmts(b, func(st *stmt) {
			for _, l := range mentions(st) {
				uses[l]++
			}
		})
	}
	for _, b := range fn.blocks {
		walkBlocks(b, func(b *block) {
			out := b.stmts[:0]
			for i := 0; i < len(b.stmts); i++ {
				if i+2 < len(b.stmts) {
					mk, ins, add := b.stmts[i], b.stmts[i+1], b.stmts[i+2]
					t := mk.target
					if mk.op == opMakeObject && ins.op == opObjectInsert && ins.target == t && ins.b.term != nil &&
						ins.b.term.Equal(resultKey()) && (ins.a.term != nil || ins.a.local != t) &&
						add.op == opResultSetAdd && add.target == t && uses[t] == 3 {
						out = append(out, stmt{op: opResultValue, a: ins.a, loc: add.loc})
						i += 2
						continue
					}
				}
				out = append(out, b.stmts[i])
			}
			b.stmts = out
		})
	}
}

// walkBlocks calls visit on b and every block nested in it.
func walkBlocks(b *block, visit func(*block)) {
	visit(b)
	for i := range b.stmts {
		st := &b.stmts[i]
		if st.block != nil {
			walkBlocks(st.block, visit)
		}
		for _, sub := range st.blocks {
			walkBlocks(sub, visit)
		}
	}
}

// mentions lists the locals a statement reads or writes (a local twice if used twice).
func mentions(st *stmt) []int {
	var out []int
	opnd := func(o operand) {
		if o.term == nil {
			out = append(out, o.local)
		}
	}
	switch st.op {
	case opBlock, opBreak, opNop, opNot:
	case opScan:
		out = append(out, st.target, st.key, st.value)
	case opObjectMerge:
		out = append(out, st.key, st.value, st.target)
	case opCallDynamic:
		out = append(out, st.dynArgs...)
		out = append(out, st.target)
	case opEqual, opNotEqual, opIsArray, opIsObject, opIsSet, opResultValue:
	default:
		out = append(out, st.target)
	}
	opnd(st.a)
	opnd(st.b)
	for _, o := range st.args {
		opnd(o)
	}
	for _, o := range st.dynPath {
		opnd(o)
	}
	return out
}
