package irvm

import (
	"github.com/open-policy-agent/opa/v1/ast"
)

// The IR has no comprehension indexing: a group-by such as
//
//	{t: {u | some p in pairs; p[0] == t; u := p[1]} | some q in pairs; t := q[0]}
//
// plans as a scan of pairs inside a scan of pairs, quadratic in len(pairs). A ScanStmt
// whose block starts by deriving a value from the element (key/value AssignVars, Dots with
// constant keys) and comparing it with EqualStmt to a value fixed outside the scan is a
// filter: when its source is immutable and is scanned a second time in one evaluation,
// the source is indexed once by the derived value (hashed as OPA hashes values, confirmed
// with OPA's comparison) and each scan visits only the matching elements, in the
// source's order. The block still runs whole on each of them, comparison included, so
// results are the same as without the index.

// scanFilter describes a filtering scan: the element's value at path (constant keys,
// applied as DotStmt would) must equal outer.
type scanFilter struct {
	path []*ast.Term
	// pathKey identifies path among the filters (scans filtering the same source by the
	// same path share one index).
	pathKey string
	outer   operand
}

// indexKey identifies an index: a source collection (by identity: arrays, objects and
// sets are pointers) and a path.
type indexKey struct {
	source  ast.Value
	pathKey string
}

// scanIndex is one source indexed by one path. Until a second scan asks for it, only
// the count of scans is kept.
type scanIndex struct {
	scans   int
	keys    []*ast.Term
	values  []*ast.Term
	buckets map[int][]indexEntry
}

type indexEntry struct {
	pos     int
	derived *ast.Term
}

// indexedScan runs a filtering scan through its index when it has one. done false means
// the caller runs the plain scan.
func (s *state) indexedScan(f []*ast.Term, st *stmt, src *ast.Term) (int, bool) {
	switch src.Value.(type) {
	case *ast.Array, ast.Object, ast.Set:
	default:
		return flowNext, false
	}
	outer := get(f, &st.scan.outer)
	if outer == nil {
		return flowNext, false
	}
	idx := s.index(src.Value, st.scan)
	if idx == nil {
		return flowNext, false
	}
	for _, e := range idx.buckets[outer.Value.Hash()] {
		if !equal(e.derived, outer) {
			continue
		}
		if r, stop := s.iteration(f, st, idx.keys[e.pos], idx.values[e.pos]); stop {
			return r, true
		}
	}
	return flowNext, true
}

// index returns the index of src by filter's path, or nil while it has been scanned only
// once in this evaluation. In a parallel evaluation the indexes are shared.
func (s *state) index(src ast.Value, filter *scanFilter) *scanIndex {
	indexes := s.indexes
	if s.shared != nil {
		s.shared.mu.Lock()
		defer s.shared.mu.Unlock()
		indexes = s.shared.indexes
	} else if indexes == nil {
		s.indexes = map[indexKey]*scanIndex{}
		indexes = s.indexes
	}
	key := indexKey{source: src, pathKey: filter.pathKey}
	idx := indexes[key]
	if idx == nil {
		idx = &scanIndex{}
		indexes[key] = idx
	}
	idx.scans++
	if idx.scans < 2 {
		return nil
	}
	if idx.buckets == nil {
		idx.build(src, filter.path)
	}
	return idx
}

// build lists the source's elements in scan order and buckets them by derived value.
func (idx *scanIndex) build(src ast.Value, path []*ast.Term) {
	switch v := src.(type) {
	case *ast.Array:
		idx.keys = make([]*ast.Term, v.Len())
		idx.values = make([]*ast.Term, v.Len())
		for i := range idx.keys {
			idx.keys[i], idx.values[i] = ast.InternedTerm(i), v.Elem(i)
		}
	case ast.Object:
		idx.keys = v.Keys()
		idx.values = make([]*ast.Term, len(idx.keys))
		for i, k := range idx.keys {
			idx.values[i] = v.Get(k)
		}
	case ast.Set:
		idx.keys = append([]*ast.Term(nil), v.Slice()...)
		idx.values = idx.keys
	}
	idx.buckets = map[int][]indexEntry{}
	for i, e := range idx.values {
		d := e
		for _, k := range path {
			if d = dot(d, k); d == nil {
				break
			}
		}
		if d == nil {
			continue // undefined: no outer value equals it
		}
		h := d.Value.Hash()
		idx.buckets[h] = append(idx.buckets[h], indexEntry{pos: i, derived: d})
	}
}

// analyseScans marks the filtering scans of fn whose source local is immutable.
func analyseScans(fn *function) {
	frozen := frozenLocals(fn)
	for _, b := range fn.blocks {
		walkStmts(b, func(st *stmt) {
			if st.op == opScan && frozen[st.target] {
				st.scan = filterOf(st)
			}
		})
	}
}

// walkStmts calls visit on every statement of b, nested blocks included.
func walkStmts(b *block, visit func(*stmt)) {
	for i := range b.stmts {
		st := &b.stmts[i]
		visit(st)
		if st.block != nil {
			walkStmts(st.block, visit)
		}
		for _, sub := range st.blocks {
			walkStmts(sub, visit)
		}
	}
}

// writes lists the locals a statement assigns.
func writes(st *stmt) []int {
	switch st.op {
	case opArrayAppend, opAssignInt, opAssignConst, opAssignVar, opAssignVarOnce, opCall, opCallBuiltin, opCallDynamic,
		opDot, opLen, opMakeArray, opMakeNull, opMakeNumber, opMakeObject, opMakeSet, opObjectInsert,
		opObjectInsertOnce, opObjectMerge, opResetLocal, opSetAdd, opWith:
		return []int{st.target}
	case opScan:
		return []int{st.key, st.value}
	}
	return nil
}

// frozenLocals finds the locals of fn that only ever hold immutable values: the
// parameters (input, data, arguments) unless written, results of planned functions (complete values
// the IR never changes), and values read from those by DotStmt or copied by AssignVar.
// Statements that build collections (Make*, *Append, *Insert, SetAdd) and WithStmt
// targets disqualify their local.
func frozenLocals(fn *function) map[int]bool {
	var all []*stmt
	for _, b := range fn.blocks {
		walkStmts(b, func(st *stmt) { all = append(all, st) })
	}
	frozen := map[int]bool{}
	for l := range fn.nlocals {
		frozen[l] = true
	}
	isFrozen := func(o operand) bool { return o.term != nil || frozen[o.local] }
	for changed := true; changed; {
		changed = false
		for _, st := range all {
			for _, l := range writes(st) {
				if !frozen[l] {
					continue
				}
				ok := false
				switch st.op {
				case opCall, opCallDynamic:
					ok = true
				case opAssignVar, opAssignVarOnce, opDot:
					ok = isFrozen(st.a)
				case opScan:
					ok = frozen[st.target]
				}
				if !ok {
					frozen[l] = false
					changed = true
				}
			}
		}
	}
	return frozen
}

// filterOf recognises a filtering scan: its block's leading statements only derive values
// from the element (AssignVar of the key or value, MakeNumber constants, DotStmt with a
// constant key on a derived value), followed by an EqualStmt of a derived value with a
// constant or with a local the scan's block never writes.
func filterOf(st *stmt) *scanFilter {
	written := map[int]bool{st.key: true, st.value: true}
	walkStmts(st.block, func(s *stmt) {
		for _, l := range writes(s) {
			written[l] = true
		}
	})
	derived := map[int][]*ast.Term{st.value: {}}
	consts := map[int]*ast.Term{}
	constant := func(o operand) *ast.Term {
		if o.term != nil {
			return o.term
		}
		return consts[o.local]
	}
	for i := range st.block.stmts {
		s := &st.block.stmts[i]
		switch s.op {
		case opAssignVar:
			if s.a.term != nil {
				return nil
			}
			if p, ok := derived[s.a.local]; ok {
				derived[s.target] = p
			} else if s.a.local == st.key {
				delete(derived, s.target) // the key is not derived from the element
			} else {
				return nil
			}
			delete(consts, s.target)
		case opMakeNumber:
			consts[s.target] = s.term
			delete(derived, s.target)
		case opDot:
			p, ok := derived[s.a.local]
			k := constant(s.b)
			if s.a.term != nil || !ok || k == nil {
				return nil
			}
			derived[s.target] = append(append([]*ast.Term(nil), p...), k)
			delete(consts, s.target)
		case opEqual:
			for _, pair := range [2][2]operand{{s.a, s.b}, {s.b, s.a}} {
				in, out := pair[0], pair[1]
				p, ok := derived[in.local]
				if in.term != nil || !ok {
					continue
				}
				if out.term == nil && written[out.local] {
					continue
				}
				return &scanFilter{path: p, pathKey: ast.NewArray(p...).String(), outer: out}
			}
			return nil
		default:
			return nil
		}
	}
	return nil
}
