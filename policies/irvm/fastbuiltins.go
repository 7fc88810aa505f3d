package irvm

import (
	"strconv"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
)

// fastBuiltins returns a shortcut for builtin name, or nil. A shortcut handles the common
// operands of a builtin whose OPA implementation takes a slow general path for them, and
// gives exactly OPA's result (TestFastBuiltinsMatchOPA); other operands go to OPA.
func fastBuiltins(name string) func(args []*ast.Term) (*ast.Term, bool) {
	switch name {
	case "div":
		return fastDiv
	case "sprintf":
		return fastSprintf
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

// fastSprintf formats the common case of sprintf, a format whose verbs are %s, %v and %q
// on strings and %d and %v on integers (and %%), without flags, width or precision, with
// as many arguments as verbs: the text fmt.Sprintf gives OPA for them, without boxing
// each argument. Anything else (floats, big integers, other values or verbs, a wrong
// count) goes to OPA.
func fastSprintf(args []*ast.Term) (*ast.Term, bool) {
	if len(args) != 2 {
		return nil, false
	}
	format, ok := args[0].Value.(ast.String)
	if !ok {
		return nil, false
	}
	list, ok := args[1].Value.(*ast.Array)
	if !ok {
		return nil, false
	}
	f := string(format)
	var b strings.Builder
	b.Grow(len(f) + 16*list.Len())
	next := 0
	for {
		i := strings.IndexByte(f, '%')
		if i < 0 {
			b.WriteString(f)
			break
		}
		b.WriteString(f[:i])
		if i+1 >= len(f) {
			return nil, false
		}
		verb := f[i+1]
		f = f[i+2:]
		if verb == '%' {
			b.WriteByte('%')
			continue
		}
		if next >= list.Len() {
			return nil, false
		}
		arg := list.Elem(next).Value
		next++
		switch v := arg.(type) {
		case ast.String:
			switch verb {
			case 's', 'v':
				b.WriteString(string(v))
			case 'q':
				b.WriteString(strconv.Quote(string(v)))
			default:
				return nil, false
			}
		case ast.Number:
			if verb != 'd' && verb != 'v' || strings.ContainsAny(string(v), ".eE") {
				return nil, false
			}
			n, err := strconv.ParseInt(string(v), 10, 64)
			if err != nil {
				return nil, false
			}
			b.WriteString(strconv.FormatInt(n, 10))
		default:
			return nil, false
		}
	}
	if next != list.Len() {
		return nil, false
	}
	return ast.StringTerm(b.String()), true
}
