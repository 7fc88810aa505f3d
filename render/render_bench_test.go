package render_test

import (
	"context"
	"testing"

	"github.com/eventpipe/eventpipe/render"
)

// BenchmarkRenderProd measures one full offline render of the prod stack:
// read and validate the config, run the program with mocks, build and encode the plan.
func BenchmarkRenderProd(b *testing.B) {
	opts := render.Options{Stack: "prod", StackDir: "../stacks"}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := render.Stack(context.Background(), opts); err != nil {
			b.Fatal(err)
		}
	}
}
