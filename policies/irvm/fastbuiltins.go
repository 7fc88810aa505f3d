package irvm

import (
	"github.com/open-policy-agent/opa/v1/ast"
)

// fastBuiltins returns a shortcut for builtin name, or nil. A shortcut handles the common
// operands of a builtin whose OPA implementation takes a slow general path for them, and
// gives exactly OPA's result (TestFastBuiltinsMatchOPA); other operands go to OPA.
func fastBuiltins(name string) func(args []*ast.Term) (*ast.Term, bool) {
	switch name {
	case "div":
		return fastDiv
	}
	return nil
}

// maxExactInt bounds the integers a float64 (and OPA's big.Float quotient) holds exactly.
const maxExactInt = 1 << 53

// fastDiv divides integers that divide exactly, such as the nanoseconds of a duration by
// 1e9: OPA computes such quotients beyond the int32 range with big.Float and prints an
// integral result as the integer.
func fastDiv(args []*ast.Term) (*ast.Term, bool) {
	if len(args) != 2 {
		return nil, false
	}
	a, ok := args[0].Value.(ast.Number)
	if !ok {
		return nil, false
	}
	b, ok := args[1].Value.(ast.Number)
	if !ok {
		return nil, false
	}
	x, ok := a.Int64()
	if !ok {
		return nil, false
	}
	y, ok := b.Int64()
	if !ok || x == 0 || y == 0 || x%y != 0 || x > maxExactInt || x < -maxExactInt || y > maxExactInt || y < -maxExactInt {
		return nil, false
	}
	return ast.InternedTerm(int(x / y)), true
}
