package evaluate

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"sync"
	"testing"

	"github.com/eventpipe/eventpipe/policies"
	"github.com/eventpipe/eventpipe/policies/plan"
)

// TestEnginesShareCompiledRules: an Engine prepared on a shared Compiled judges a document
// exactly as an Engine compiled on its own (New) with the same configuration, whatever the
// configuration and however many Engines of other configurations share the rules and
// evaluate at the same time. Configurations are generated: the dead-letter attempts range
// around the fixtures' 5 attempts, and the environment.
func TestEnginesShareCompiledRules(t *testing.T) {
	mods, err := policies.Modules()
	if err != nil {
		t.Fatal(err)
	}
	shared, err := Compile(mods, policies.Package)
	if err != nil {
		t.Fatal(err)
	}
	docs := map[string][]byte{
		"preview":   fixture(t, "preview_show_sames.json.txt"),
		"terraform": fixture(t, "terraform_plan.json.txt"),
	}
	rng := rand.New(rand.NewPCG(37, 2))
	n := 6
	configs := make([]map[string]any, n)
	for i := range configs {
		lo := 1 + rng.IntN(9) // 5 attempts are below lo half the time
		cfg := map[string]any{"deny_dead_letter_attempts_out_of_range": map[string]any{"min": lo, "max": lo + rng.IntN(100)}}
		if env := []string{"", "dev", "prod"}[rng.IntN(3)]; env != "" {
			cfg["environment"] = env
		}
		configs[i] = cfg
	}
	// What each configuration judges with rules compiled for it alone.
	want := make([]map[string][]Finding, n)
	for i, cfg := range configs {
		e, err := New(context.Background(), Options{Modules: mods, Package: policies.Package, Config: cfg})
		if err != nil {
			t.Fatal(err)
		}
		want[i] = judgeAll(t, e, docs)
	}
	got := make([]map[string][]Finding, n)
	var wg sync.WaitGroup
	for i, cfg := range configs {
		wg.Go(func() {
			e, err := shared.Engine(context.Background(), cfg)
			if err != nil {
				t.Error(err)
				return
			}
			got[i] = judgeAll(t, e, docs)
		})
	}
	wg.Wait()
	distinct := map[string]bool{}
	for i := range configs {
		if !reflect.DeepEqual(got[i], want[i]) {
			t.Errorf("config %v: shared rules judged\n%v\nwant (rules compiled alone)\n%v", configs[i], got[i], want[i])
		}
		distinct[fmt.Sprint(want[i])] = true
	}
	// The generated configurations must reach different verdicts, or the comparison could
	// not tell one configuration's engine from another's.
	if len(distinct) < 2 {
		t.Fatalf("the %d generated configurations all judged alike: widen the generator", n)
	}
}

// judgeAll evaluates e on every document (name → bytes); it is safe to call from several
// goroutines.
func judgeAll(t *testing.T, e *Engine, docs map[string][]byte) map[string][]Finding {
	out := map[string][]Finding{}
	for name, data := range docs {
		p, err := plan.Parse(data, name)
		if err != nil {
			t.Error(err)
			continue
		}
		fs, err := e.Evaluate(context.Background(), p)
		if err != nil {
			t.Error(err)
			continue
		}
		out[name] = fs
	}
	return out
}
