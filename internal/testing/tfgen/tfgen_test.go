package tfgen

import (
	"context"
	"encoding/json"
	"testing"
)

func TestModelAccepts(t *testing.T) {
	q := prepareModel(t)
	ctx := context.Background()
	for seed := uint64(0); seed < 50; seed++ {
		m, err := evalModel(ctx, q, Plan(seed))
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if seed < 3 {
			b, _ := json.MarshalIndent(m, "", " ")
			t.Logf("%s", b[:min(len(b), 3000)])
		}
	}
}
