package plan

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/eventpipe/eventpipe/internal/srcpos"
)

// TestDeclared: for any tree of resources whose states carry the engine's positions
// (a stack trace, a source position, both or neither; frames inside the project or
// outside it: the SDK, a library in the module cache, a vendored copy), in a preview
// or a stack export, each resource is declared at the innermost in-project frame of its
// stack trace, else its in-project source position, else where its nearest such
// ancestor is; resources with no such ancestor have none.
func TestDeclared(t *testing.T) {
	rng := rand.New(rand.NewPCG(37, 4))
	outside := []string{"../../go/pkg/mod/github.com/pulumi/pulumi/sdk/v3@v3.200.0/go/pulumi/context.go", "../eventpipe/components/pipeline.go", "vendor/github.com/eventpipe/eventpipe/components/topic.go"}
	inside := []string{"main.go", "orders/orders.go", "pipelines/helpers.go"}
	pos := func(in bool) string {
		if in {
			return srcpos.Format(inside[rng.IntN(len(inside))], 1+rng.IntN(300))
		}
		return srcpos.Format(outside[rng.IntN(len(outside))], 1+rng.IntN(300))
	}
	for round := range 500 {
		n := 1 + rng.IntN(12)
		states := make([]map[string]any, n)
		want := map[string]string{}
		for i := range n {
			urn := fmt.Sprintf("urn:pulumi:dev::team::t%d::r%d", round, i)
			st := map[string]any{"urn": urn, "type": "gcp:pubsub/topic:Topic"}
			own := ""
			if rng.IntN(2) == 0 {
				var frames []any
				for range rng.IntN(5) {
					p := pos(rng.IntN(3) == 0)
					if own == "" && srcpos.InProject(mustRel(t, p)) {
						own = p
					}
					frames = append(frames, map[string]any{"sourcePosition": p})
				}
				st["stackTrace"] = frames
			}
			if rng.IntN(2) == 0 {
				p := pos(rng.IntN(2) == 0)
				if own == "" && srcpos.InProject(mustRel(t, p)) {
					own = p
				}
				st["sourcePosition"] = p
			}
			if i > 0 && rng.IntN(4) != 0 {
				parent := rng.IntN(i)
				st["parent"] = states[parent]["urn"]
				if own == "" {
					own = want[states[parent]["urn"].(string)]
				}
			}
			if own != "" {
				want[urn] = own
			}
			states[i] = st
		}
		var steps, resources []any
		for _, st := range states {
			steps = append(steps, map[string]any{"op": "create", "urn": st["urn"], "newState": st})
			resources = append(resources, st)
		}
		// Children may come before their parents in a document.
		rng.Shuffle(len(steps), func(i, j int) { steps[i], steps[j] = steps[j], steps[i] })
		for _, doc := range []map[string]any{{"steps": steps}, {"version": 3, "deployment": map[string]any{"resources": resources}}} {
			got := Declared(doc)
			if len(got) != len(want) {
				t.Fatalf("round %d: Declared = %v, want %v", round, got, want)
			}
			for urn, p := range want {
				if got[urn] != p {
					b, _ := json.Marshal(doc)
					t.Fatalf("round %d: %s declared at %q, want %q\n%s", round, urn, got[urn], p, b)
				}
			}
		}
	}
}

func mustRel(t *testing.T, pos string) string {
	rel, _, ok := srcpos.Parse(pos)
	if !ok {
		t.Fatalf("Parse(%q)", pos)
	}
	return rel
}
