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

// TestFastSprintfMatchesOPA compares the sprintf shortcut with OPA's sprintf on formats
// and arguments it handles and on those it must leave to OPA.
func TestFastSprintfMatchesOPA(t *testing.T) {
	formats := []string{"", "plain", "%s", "%v", "%q", "%d", "%%", "100%% %s", "%s: %s '%s' has no backlog alert",
		"%s dead-letters after %v delivery attempts; the allowed range is %v-%v", "subscription_id=%q", "%s %d",
		"%x", "%5s", "%-s", "%.2f", "%", "trailing %", "%s%s", "%v%%%v", "é %s ü"}
	values := []string{`"a"`, `""`, `"urn:pulumi:prod::eventpipe::gcp:pubsub/subscription:Subscription::orders"`,
		`"quote \" and \\ back"`, `"tab\tnewline\n"`, `"ünïcödé ☃"`, `"\u0000\u007f"`, `"%s"`,
		"0", "5", "-7", "600", "9223372036854775807", "9223372036854775808", "-9223372036854775808",
		"1.5", "1.0", "1e3", "12345678901234567890123", "true", "null", `["x"]`, `{"a": 1}`}
	opa := topdown.GetBuiltin("sprintf")
	handled := 0
	check := func(format string, list []*ast.Term) {
		args := []*ast.Term{ast.StringTerm(format), ast.ArrayTerm(list...)}
		got, ok := fastSprintf(args)
		if !ok {
			return
		}
		handled++
		var want *ast.Term
		err := opa(topdown.BuiltinContext{}, args, func(t *ast.Term) error { want = t; return nil })
		if err != nil || want == nil || got.Value.Compare(want.Value) != 0 {
			t.Errorf("sprintf(%q, %v): shortcut %v, OPA %v (error %v)", format, list, got, want, err)
		}
	}
	for _, f := range formats {
		check(f, nil)
		for _, x := range values {
			check(f, []*ast.Term{ast.MustParseTerm(x)})
			for _, y := range values {
				check(f, []*ast.Term{ast.MustParseTerm(x), ast.MustParseTerm(y)})
				check(f, []*ast.Term{ast.MustParseTerm(x), ast.MustParseTerm(y), ast.MustParseTerm(x)})
			}
		}
	}
	if handled < 400 {
		t.Fatalf("the shortcut handled only %d calls", handled)
	}
	for _, c := range []struct {
		format string
		args   string
	}{{"%s", `[1.5]`}, {"%d", `["a"]`}, {"%s", `[]`}, {"%s", `["a", "b"]`}, {"%x", `["a"]`}, {"%5s", `["a"]`},
		{"%d", `[12345678901234567890123]`}, {"%v", `[true]`}, {"trailing %", `[]`}, {"%s", `[{"a": 1}]`}} {
		if got, ok := fastSprintf([]*ast.Term{ast.StringTerm(c.format), ast.MustParseTerm(c.args)}); ok {
			t.Errorf("sprintf(%q, %s): the shortcut gave %v, want it left to OPA", c.format, c.args, got)
		}
	}
}
