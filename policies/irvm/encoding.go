package irvm

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
)

// A loaded Program can be saved in a compact binary form and loaded back without the IR:
// decoding the planner's JSON (package ir re-reads nested blocks once per nesting level)
// costs tens of milliseconds for a rule set of some hundred rules, reading this form
// about a millisecond. The form is private to this package version: MarshalBinary and
// UnmarshalProgram of the same build agree, nothing else reads it.

// encodingVersion changes whenever the layout below does.
const encodingVersion = 3

// MarshalBinary encodes the loaded program (see UnmarshalProgram).
func (p *Program) MarshalBinary() ([]byte, error) {
	w := &writer{terms: map[*ast.Term]int{}}
	w.strings(p.files)
	w.uint(uint64(len(p.funcs)))
	for _, fn := range p.funcs {
		if err := w.function(fn); err != nil {
			return nil, err
		}
	}
	w.uint(uint64(len(p.plans)))
	for _, fn := range p.plans {
		if err := w.function(fn); err != nil {
			return nil, err
		}
	}
	// The constants are written last but read first: the body refers to them by index.
	body := w.buf
	w.buf = nil
	w.uint(encodingVersion)
	w.uint(uint64(len(w.termList)))
	for _, t := range w.termList {
		if err := w.term(t); err != nil {
			return nil, err
		}
	}
	return append(w.buf, body...), nil
}

// UnmarshalProgram loads a program saved by MarshalBinary.
func UnmarshalProgram(data []byte) (*Program, error) {
	r := &reader{buf: data}
	if v := r.uint(); v != encodingVersion && r.err == nil {
		return nil, fmt.Errorf("loading a saved IR program: encoding version %d, this build reads %d", v, encodingVersion)
	}
	n := r.count()
	r.terms = make([]*ast.Term, 0, n)
	for range n {
		r.terms = append(r.terms, r.term())
	}
	p := &Program{planIndex: map[string]int{}, dynamic: map[string]int{}}
	p.files = r.strings()
	nf := r.uint()
	for i := uint64(0); i < nf && r.err == nil; i++ {
		fn := r.function()
		p.funcs = append(p.funcs, fn)
		if fn.path != nil {
			p.dynamic[strings.Join(fn.path, "/")] = len(p.funcs) - 1
		}
	}
	np := r.uint()
	for i := uint64(0); i < np && r.err == nil; i++ {
		fn := r.function()
		p.planIndex[fn.name] = len(p.plans)
		p.plans = append(p.plans, fn)
	}
	if r.err == nil && len(r.buf) != 0 {
		r.err = errors.New("trailing bytes")
	}
	if r.err == nil {
		r.err = p.validate()
	}
	if r.err != nil {
		return nil, fmt.Errorf("loading a saved IR program: %w", r.err)
	}
	p.states.New = func() any { return newState(p) }
	return p, nil
}

type writer struct {
	buf      []byte
	terms    map[*ast.Term]int
	termList []*ast.Term
}

func (w *writer) uint(v uint64) { w.buf = binary.AppendUvarint(w.buf, v) }
func (w *writer) int(v int)     { w.buf = binary.AppendVarint(w.buf, int64(v)) }
func (w *writer) bool(b bool) {
	if b {
		w.uint(1)
	} else {
		w.uint(0)
	}
}

func (w *writer) string(s string) {
	w.uint(uint64(len(s)))
	w.buf = append(w.buf, s...)
}

func (w *writer) strings(ss []string) {
	if ss == nil {
		w.uint(0)
		return
	}
	w.uint(uint64(len(ss)) + 1)
	for _, s := range ss {
		w.string(s)
	}
}

// termRef writes a reference to a constant (nil as 0).
func (w *writer) termRef(t *ast.Term) {
	if t == nil {
		w.uint(0)
		return
	}
	i, ok := w.terms[t]
	if !ok {
		i = len(w.termList)
		w.terms[t] = i
		w.termList = append(w.termList, t)
	}
	w.uint(uint64(i) + 1)
}

func (w *writer) term(t *ast.Term) error {
	switch v := t.Value.(type) {
	case ast.String:
		w.uint(0)
		w.string(string(v))
	case ast.Number:
		w.uint(1)
		w.string(string(v))
	case ast.Boolean:
		w.uint(2)
		w.bool(bool(v))
	case ast.Null:
		w.uint(3)
	case *ast.Array: // collections folded at load (constfold.go), elements inline
		w.uint(4)
		w.uint(uint64(v.Len()))
		for i := range v.Len() {
			if err := w.term(v.Elem(i)); err != nil {
				return err
			}
		}
	case ast.Set:
		w.uint(5)
		w.uint(uint64(v.Len()))
		for _, e := range v.Slice() {
			if err := w.term(e); err != nil {
				return err
			}
		}
	case ast.Object:
		w.uint(6)
		w.uint(uint64(v.Len()))
		for _, k := range v.Keys() {
			if err := w.term(k); err != nil {
				return err
			}
			if err := w.term(v.Get(k)); err != nil {
				return err
			}
		}
	default:
		return fmt.Errorf("saving an IR program: constant %v of type %T", t, t.Value)
	}
	return nil
}

func (w *writer) operand(o operand) {
	w.int(o.local)
	w.termRef(o.term)
}

func (w *writer) function(fn *function) error {
	w.string(fn.name)
	w.uint(uint64(len(fn.params)))
	for _, p := range fn.params {
		w.int(p)
	}
	w.int(fn.ret)
	w.int(fn.nlocals)
	w.bool(fn.memo)
	w.strings(fn.path)
	return w.blocks(fn.blocks)
}

func (w *writer) blocks(bs []*block) error {
	w.uint(uint64(len(bs)))
	for _, b := range bs {
		if err := w.block(b); err != nil {
			return err
		}
	}
	return nil
}

func (w *writer) block(b *block) error {
	if b == nil {
		w.uint(0)
		return nil
	}
	w.uint(uint64(len(b.stmts)) + 1)
	for i := range b.stmts {
		if err := w.stmt(&b.stmts[i]); err != nil {
			return err
		}
	}
	return nil
}

func (w *writer) stmt(st *stmt) error {
	w.uint(uint64(st.op))
	w.operand(st.a)
	w.operand(st.b)
	w.int(st.target)
	w.int(st.key)
	w.int(st.value)
	w.int(st.index)
	w.termRef(st.term)
	if err := w.block(st.block); err != nil {
		return err
	}
	if err := w.blocks(st.blocks); err != nil {
		return err
	}
	w.uint(uint64(len(st.args)))
	for _, a := range st.args {
		w.operand(a)
	}
	if st.builtin != nil {
		w.bool(true)
		w.string(st.builtin.name)
	} else {
		w.bool(false)
	}
	w.uint(uint64(len(st.path)))
	for _, t := range st.path {
		w.termRef(t)
	}
	w.uint(uint64(len(st.dynPath)))
	for _, o := range st.dynPath {
		w.operand(o)
	}
	w.uint(uint64(len(st.dynArgs)))
	for _, a := range st.dynArgs {
		w.int(a)
	}
	if st.scan != nil {
		w.bool(true)
		w.uint(uint64(len(st.scan.path)))
		for _, t := range st.scan.path {
			w.termRef(t)
		}
		w.string(st.scan.pathKey)
		w.operand(st.scan.outer)
	} else {
		w.bool(false)
	}
	for _, n := range []int{st.loc.File, st.loc.Row, st.loc.Col, st.loc.EndRow, st.loc.EndCol} {
		w.int(n)
	}
	return nil
}

type reader struct {
	buf   []byte
	err   error
	terms []*ast.Term
	// builtins caches the builtins looked up, by name.
	builtins map[string]*builtinCall
}

func (r *reader) fail(err error) {
	if r.err == nil {
		r.err = err
	}
	r.buf = nil
}

func (r *reader) uint() uint64 {
	v, n := binary.Uvarint(r.buf)
	if n <= 0 {
		r.fail(errors.New("truncated"))
		return 0
	}
	r.buf = r.buf[n:]
	return v
}

func (r *reader) int() int {
	v, n := binary.Varint(r.buf)
	if n <= 0 {
		r.fail(errors.New("truncated"))
		return 0
	}
	r.buf = r.buf[n:]
	return int(v)
}

// count reads a length, bounded by the bytes left (every element takes one at least).
func (r *reader) count() int {
	n := r.uint()
	if n > uint64(len(r.buf)) {
		r.fail(errors.New("length beyond the data"))
		return 0
	}
	return int(n)
}

func (r *reader) bool() bool { return r.uint() == 1 }

func (r *reader) string() string {
	n := r.uint()
	if n > uint64(len(r.buf)) {
		r.fail(errors.New("string beyond the data"))
		return ""
	}
	s := string(r.buf[:n])
	r.buf = r.buf[n:]
	return s
}

func (r *reader) strings() []string {
	n := r.uint()
	if n == 0 {
		return nil
	}
	if n-1 > uint64(len(r.buf)) {
		r.fail(errors.New("length beyond the data"))
		return nil
	}
	ss := make([]string, n-1)
	for i := range ss {
		ss[i] = r.string()
	}
	return ss
}

func (r *reader) term() *ast.Term {
	switch kind := r.uint(); kind {
	case 0:
		return ast.StringTerm(r.string())
	case 1:
		s := r.string()
		if t := ast.InternedIntNumberTermFromString(s); t != nil {
			return t
		}
		return ast.NewTerm(ast.Number(s))
	case 2:
		return ast.InternedTerm(r.bool())
	case 3:
		return ast.InternedNullTerm
	case 4, 5:
		n := r.count()
		elems := make([]*ast.Term, 0, n)
		for i := 0; i < n && r.err == nil; i++ {
			elems = append(elems, r.term())
		}
		if r.err != nil {
			return nil
		}
		if kind == 4 {
			return ast.ArrayTerm(elems...)
		}
		return ast.SetTerm(elems...)
	case 6:
		n := r.count()
		obj := ast.NewObject()
		for i := 0; i < n && r.err == nil; i++ {
			k := r.term()
			v := r.term()
			if r.err == nil {
				obj.Insert(k, v)
			}
		}
		if r.err != nil {
			return nil
		}
		return ast.NewTerm(obj)
	default:
		r.fail(fmt.Errorf("constant of unknown kind %d", kind))
		return nil
	}
}

func (r *reader) termRef() *ast.Term {
	i := r.uint()
	if i == 0 {
		return nil
	}
	if i > uint64(len(r.terms)) {
		r.fail(fmt.Errorf("constant %d of %d", i, len(r.terms)))
		return nil
	}
	return r.terms[i-1]
}

func (r *reader) operand() operand {
	return operand{local: r.int(), term: r.termRef()}
}

func (r *reader) function() *function {
	fn := &function{name: r.string()}
	fn.params = make([]int, r.count())
	for i := range fn.params {
		fn.params[i] = r.int()
	}
	fn.ret = r.int()
	fn.nlocals = r.int()
	fn.memo = r.bool()
	fn.path = r.strings()
	fn.blocks = r.blocks()
	return fn
}

func (r *reader) blocks() []*block {
	n := r.count()
	if n == 0 {
		return nil
	}
	bs := make([]*block, n)
	for i := range bs {
		bs[i] = r.block()
	}
	return bs
}

func (r *reader) block() *block {
	n := r.uint()
	if n == 0 {
		return nil
	}
	if n-1 > uint64(len(r.buf)) {
		r.fail(errors.New("length beyond the data"))
		return nil
	}
	b := &block{stmts: make([]stmt, n-1)}
	for i := range b.stmts {
		r.stmt(&b.stmts[i])
	}
	return b
}

func (r *reader) stmt(st *stmt) {
	st.op = opcode(r.uint())
	st.a = r.operand()
	st.b = r.operand()
	st.target = r.int()
	st.key = r.int()
	st.value = r.int()
	st.index = r.int()
	st.term = r.termRef()
	st.block = r.block()
	st.blocks = r.blocks()
	if n := r.count(); n > 0 {
		st.args = make([]operand, n)
		for i := range st.args {
			st.args[i] = r.operand()
		}
	}
	if r.bool() {
		name := r.string()
		if r.builtins == nil {
			r.builtins = map[string]*builtinCall{}
		}
		b := r.builtins[name]
		if b == nil {
			if b = newBuiltinCall(name); b == nil {
				r.fail(fmt.Errorf("builtin %s has no OPA implementation", name))
				return
			}
			r.builtins[name] = b
		}
		st.builtin = b
	}
	if n := r.count(); n > 0 {
		st.path = make([]*ast.Term, n)
		for i := range st.path {
			st.path[i] = r.termRef()
		}
	}
	if n := r.count(); n > 0 {
		st.dynPath = make([]operand, n)
		for i := range st.dynPath {
			st.dynPath[i] = r.operand()
		}
	}
	if n := r.count(); n > 0 {
		st.dynArgs = make([]int, n)
		for i := range st.dynArgs {
			st.dynArgs[i] = r.int()
		}
	}
	if r.bool() {
		f := &scanFilter{path: make([]*ast.Term, r.count())}
		for i := range f.path {
			f.path[i] = r.termRef()
		}
		f.pathKey = r.string()
		f.outer = r.operand()
		st.scan = f
	}
	st.loc.File, st.loc.Row, st.loc.Col, st.loc.EndRow, st.loc.EndCol = r.int(), r.int(), r.int(), r.int(), r.int()
}

// validate checks that a decoded program only refers to locals, functions and opcodes it
// has, so that evaluating it cannot index out of range.
func (p *Program) validate() error {
	for _, fns := range [][]*function{p.funcs, p.plans} {
		for _, fn := range fns {
			var err error
			local := func(l int) {
				if (l < 0 || l >= fn.nlocals) && err == nil {
					err = fmt.Errorf("%s: local %d of %d", fn.name, l, fn.nlocals)
				}
			}
			opnd := func(o operand) {
				if o.term == nil {
					local(o.local)
				}
			}
			for _, l := range fn.params {
				local(l)
			}
			if fn.ret >= 0 {
				local(fn.ret)
			}
			for _, b := range fn.blocks {
				walkStmts(b, func(st *stmt) {
					if st.op > opAssignConst {
						err = fmt.Errorf("%s: opcode %d", fn.name, st.op)
					}
					opnd(st.a)
					opnd(st.b)
					local(st.target)
					local(st.key)
					local(st.value)
					for _, o := range append(append([]operand(nil), st.args...), st.dynPath...) {
						opnd(o)
					}
					for _, l := range st.dynArgs {
						local(l)
					}
					if st.scan != nil {
						opnd(st.scan.outer)
					}
					if st.op == opCall && (st.index < 0 || st.index >= len(p.funcs) || len(st.args) != len(p.funcs[st.index].params)) {
						err = fmt.Errorf("%s: call of function %d", fn.name, st.index)
					}
					if (st.op == opCallBuiltin) != (st.builtin != nil) {
						err = fmt.Errorf("%s: builtin call without its builtin", fn.name)
					}
					if (st.op == opScan || st.op == opNot || st.op == opWith) && st.block == nil {
						err = fmt.Errorf("%s: statement without its block", fn.name)
					}
				})
			}
			if err != nil {
				return err
			}
		}
	}
	return nil
}
