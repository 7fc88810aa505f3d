package irvm

import (
	"maps"

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
// A constant is a literal operand or a local the block gave a constant (a number, null,
// or a collection folded before) and has not changed since.
func foldBlock(b *block, fills map[int]int, aliased map[int]bool) {
	out := b.stmts[:0:0]
	changed := false
	known := map[int]*ast.Term{}
	for i := 0; i < len(b.stmts); i++ {
		st := b.stmts[i]
		if c, kept, next := foldRun(b.stmts, i, known, fills, aliased); c != nil {
			out = append(out, kept...)
			out = append(out, stmt{op: opAssignConst, term: c, target: st.target, loc: st.loc})
			for _, k := range kept {
				noteConstant(known, &k)
			}
			noteConstant(known, &out[len(out)-1])
			i = next - 1
			changed = true
			continue
		}
		out = append(out, st)
		noteConstant(known, &st)
	}
	if changed {
		b.stmts = out
	}
}

// noteConstant updates known, the constants the block's locals hold, after st.
func noteConstant(known map[int]*ast.Term, st *stmt) {
	if st.block != nil || len(st.blocks) > 0 {
		clear(known) // nested blocks may assign anything
		return
	}
	for _, l := range writes(st) {
		delete(known, l)
	}
	switch st.op {
	case opMakeNumber, opAssignInt, opAssignConst:
		known[st.target] = st.term
	case opMakeNull:
		known[st.target] = ast.InternedNullTerm
	}
}

// foldRun returns the constant collection built from stmts[i] on (nil if there is none
// to fold there), the constant-making statements within the run to keep (inner
// collections folded too), and the index after the run.
func foldRun(stmts []stmt, i int, known map[int]*ast.Term, fills map[int]int, aliased map[int]bool) (*ast.Term, []stmt, int) {
	st := stmts[i]
	if st.op != opMakeArray && st.op != opMakeSet && st.op != opMakeObject || aliased[st.target] {
		return nil, nil, i + 1
	}
	coll := st.target
	consts := maps.Clone(known)
	delete(consts, coll)
	var elems, keys []*ast.Term
	var kept []stmt
	j := i + 1
run:
	for ; j < len(stmts); j++ {
		s := stmts[j]
		switch {
		case (s.op == opMakeNumber || s.op == opAssignInt) && s.target != coll:
			consts[s.target] = s.term
			kept = append(kept, s)
		case s.op == opMakeNull && s.target != coll:
			consts[s.target] = ast.InternedNullTerm
			kept = append(kept, s)
		case (s.op == opMakeArray || s.op == opMakeSet || s.op == opMakeObject) && s.target != coll:
			// A collection within the collection, such as {} in {null, {}}.
			c, inner, next := foldRun(stmts, j, consts, fills, aliased)
			if c == nil {
				break run
			}
			kept = append(append(kept, inner...), stmt{op: opAssignConst, term: c, target: s.target, loc: s.loc})
			consts[s.target] = c
			j = next - 1
		case s.op == opArrayAppend && st.op == opMakeArray && s.target == coll,
			s.op == opSetAdd && st.op == opMakeSet && s.target == coll:
			v := constOperand(s.a, consts)
			if v == nil {
				return nil, nil, i + 1
			}
			elems = append(elems, v)
		case s.op == opObjectInsert && st.op == opMakeObject && s.target == coll:
			k, v := constOperand(s.b, consts), constOperand(s.a, consts)
			if k == nil || v == nil {
				return nil, nil, i + 1
			}
			keys, elems = append(keys, k), append(elems, v)
		default:
			break run
		}
	}
	if len(elems) != fills[coll] {
		return nil, nil, i + 1
	}
	switch st.op {
	case opMakeArray:
		return ast.ArrayTerm(elems...), kept, j
	case opMakeSet:
		return ast.SetTerm(elems...), kept, j
	}
	obj := ast.NewObject()
	for n, k := range keys {
		obj.Insert(k, elems[n])
	}
	return ast.NewTerm(obj), kept, j
}

// constOperand returns an operand's constant: its own, or the one a local was given.
func constOperand(o operand, consts map[int]*ast.Term) *ast.Term {
	if o.term != nil {
		return o.term
	}
	return consts[o.local]
}
