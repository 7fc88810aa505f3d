package irvm

import (
	"bytes"
	"context"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
)

// TestProgramRoundTrip saves and reloads every differential case's program: the reloaded
// program encodes to the same bytes and evaluates to the same results.
func TestProgramRoundTrip(t *testing.T) {
	for _, tc := range differentialCases {
		var eps []string
		for _, r := range tc.rules {
			eps = append(eps, "t/"+r)
		}
		prog, err := Load(planOf(t, map[string]string{"t.rego": tc.module, "sub.rego": subModule}, eps...))
		if err != nil {
			t.Fatal(err)
		}
		saved, err := prog.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		loaded, err := UnmarshalProgram(saved)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		again, err := loaded.MarshalBinary()
		if err != nil || !bytes.Equal(again, saved) {
			t.Fatalf("%s: the reloaded program encodes differently (%v)", tc.name, err)
		}
		plans := make([]int, len(eps))
		for i, ep := range eps {
			plans[i], _ = prog.Plan(ep)
		}
		data := ast.Value(ast.NewObject())
		if tc.data != "" {
			data = ast.MustParseTerm(tc.data).Value
		}
		for _, in := range tc.inputs {
			input := ast.MustParseTerm(in).Value
			want, wantErr := prog.Eval(context.Background(), input, data, plans)
			got, err := loaded.Eval(context.Background(), input, data, plans)
			if (err != nil) != (wantErr != nil) {
				t.Fatalf("%s on %s: error %v, original %v", tc.name, in, err, wantErr)
			}
			for _, i := range differingPlans(t, got, want) {
				t.Errorf("%s, %s on %s: reloaded %v, original %v", tc.name, eps[i], in, got[i].Terms(), want[i].Terms())
			}
		}
	}
}

// TestUnmarshalProgramRejectsDamage: every truncation, and a version or a local index
// changed, give an error (never a panic or a program).
func TestUnmarshalProgramRejectsDamage(t *testing.T) {
	prog := groupProgram(t, false)
	saved, err := prog.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	for n := 0; n < len(saved); n += 1 + n/8 {
		if _, err := UnmarshalProgram(saved[:n]); err == nil {
			t.Fatalf("a program truncated to %d of %d bytes loaded", n, len(saved))
		}
	}
	bad := append([]byte{99}, saved[1:]...)
	if _, err := UnmarshalProgram(bad); err == nil {
		t.Fatal("a program of another encoding version loaded")
	}
	prog.funcs[0].nlocals = 1 // every function uses locals 0 and 1 (input and data)
	damaged, err := prog.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := UnmarshalProgram(damaged); err == nil {
		t.Fatal("a program using a local beyond its frame loaded")
	}
}
