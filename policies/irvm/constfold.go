package irvm

import (
	"github.com/open-policy-agent/opa/v1/ast"
)

// The planner builds every collection literal of a rule at run time, each time its block
// runs: the path of object.get(r, ["labels", "env"], null) is a MakeArrayStmt and two
// ArrayAppendStmts, the set of `x in {null, ""}` a MakeSetStmt and two SetAddStmts, so a
// resource rule allocates its literals once per resource. foldConstants builds, at load,
// each collection made only of constants and replaces its statements by one assignment of
// that constant (opAssignConst). The constant is shared by every evaluation, so it is
// folded only when nothing can change it in place: the statements that fill it are the
// only ones in the function that add to its local, no other local takes its value, and
// the function does not return it (functions that add to a collection they were passed
// would stop it all: see mutatesParams).

// foldConstants folds the constant collections of fn's blocks.
func foldConstants(fn *function) {
	fills := map[int]int{}    // local -> statements adding to the collection it holds
	aliased := map[int]bool{} // locals whose value another local, or a caller, takes
	if fn.ret >= 0 {
		aliased[fn.ret] = true
	}
	for _, b := range fn.blocks {
		walkStmts(b, func(st *stmt) {
			switch st.op {
			case opArrayAppend, opSetAdd, opObjectInsert, opObjectInsertOnce:
				fills[st.target]++
			case opObjectMerge:
				aliased[st.key], aliased[st.value] = true, true
			case opReturnLocal:
				aliased[st.target] = true
			case opAssignVar, opAssignVarOnce:
				if st.a.term == nil {
					aliased[st.a.local] = true
				}
			}
		})
	}
	for _, b := range fn.blocks {
		walkBlocks(b, func(b *block) { foldBlock(b, fills, aliased) })
	}
}

// foldBlock folds the constant collections built by straight runs of b's statements: a
// MakeArray, MakeSet or MakeObject and the ArrayAppends, SetAdds or ObjectInserts of
// constants into it that follow, with the number constants they use made in between.
func foldBlock(b *block, fills map[int]int, aliased map[int]bool) {
	out := b.stmts[:0:0]
	changed := false
	for i := 0; i < len(b.stmts); i++ {
		st := b.stmts[i]
		if st.op != opMakeArray && st.op != opMakeSet && st.op != opMakeObject || aliased[st.target] {
			out = append(out, st)
			continue
		}
		coll := st.target
		consts := map[int]*ast.Term{}
		var elems, keys []*ast.Term
		var kept []stmt // the number and null constants made within the run
		ok := true
		j := i + 1
	run:
		for ; j < len(b.stmts); j++ {
			s := b.stmts[j]
			switch {
			case (s.op == opMakeNumber || s.op == opAssignInt) && s.target != coll:
				consts[s.target] = s.term
				kept = append(kept, s)
			case s.op == opMakeNull && s.target != coll:
				consts[s.target] = ast.InternedNullTerm
				kept = append(kept, s)
			case s.op == opArrayAppend && st.op == opMakeArray && s.target == coll,
				s.op == opSetAdd && st.op == opMakeSet && s.target == coll:
				v := constOperand(s.a, consts)
				if v == nil {
					ok = false
					break run
				}
				elems = append(elems, v)
			case s.op == opObjectInsert && st.op == opMakeObject && s.target == coll:
				k, v := constOperand(s.b, consts), constOperand(s.a, consts)
				if k == nil || v == nil {
					ok = false
					break run
				}
				keys, elems = append(keys, k), append(elems, v)
			default:
				break run
			}
		}
		if !ok || len(elems) != fills[coll] {
			out = append(out, st)
			continue
		}
		var c *ast.Term
		switch st.op {
		case opMakeArray:
			c = ast.ArrayTerm(elems...)
		case opMakeSet:
			c = ast.SetTerm(elems...)
		default:
			obj := ast.NewObject()
			for n, k := range keys {
				obj.Insert(k, elems[n])
			}
			c = ast.NewTerm(obj)
		}
		out = append(out, kept...)
		out = append(out, stmt{op: opAssignConst, term: c, target: coll, loc: st.loc})
		i = j - 1
		changed = true
	}
	if changed {
		b.stmts = out
	}
}

// constOperand returns an operand's constant: its own, or the one a local was given.
func constOperand(o operand, consts map[int]*ast.Term) *ast.Term {
	if o.term != nil {
		return o.term
	}
	return consts[o.local]
}
