package irvm

import (
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/topdown"
)

// TestFastBuiltinsMatchOPA compares each shortcut with OPA's implementation on a grid of
// operands, those it handles and those it leaves to OPA.
func TestFastBuiltinsMatchOPA(t *testing.T) {
	numbers := []string{"0", "1", "-1", "2", "3", "7", "10", "600", "1000000000", "-1000000000", "10000000000",
		"600000000000", "86400000000000", "9007199254740992", "9007199254740993", "18014398509481984",
		"2.5", "1e3", "1.0", "-0", "4294967296", "2147483648", "-2147483649"}
	opa := topdown.GetBuiltin("div")
	handled := 0
	for _, x := range numbers {
		for _, y := range numbers {
			args := []*ast.Term{ast.NewTerm(ast.Number(x)), ast.NewTerm(ast.Number(y))}
			var want *ast.Term
			err := opa(topdown.BuiltinContext{}, args, func(t *ast.Term) error { want = t; return nil })
			got, ok := fastDiv(args)
			if !ok {
				continue
			}
			handled++
			if err != nil || want == nil || got.Value.Compare(want.Value) != 0 || got.String() != want.String() {
				t.Errorf("%s / %s: shortcut %v, OPA %v (error %v)", x, y, got, want, err)
			}
		}
	}
	if handled < 30 {
		t.Fatalf("the shortcut handled only %d divisions", handled)
	}
}
