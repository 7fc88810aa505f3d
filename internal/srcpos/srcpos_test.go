package srcpos

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"
)

// randomPath is a project-relative path of the shapes Go programs have: folders, a file,
// some with characters a URL escapes.
func randomPath(rng *rand.Rand) string {
	parts := []string{"orders", "infra", "my dir", "a#b", "pipelines", "vendor", "v%2", "x.y"}
	p := ""
	for range rng.IntN(3) {
		p += parts[rng.IntN(len(parts))] + "/"
	}
	return p + parts[rng.IntN(len(parts))] + ".go"
}

// TestFormatParse: every position Format writes, Parse reads back as the same path and
// line, for paths with spaces, '#' and '%'; a column after the line is ignored, as the
// engine writes one for languages that have it.
func TestFormatParse(t *testing.T) {
	rng := rand.New(rand.NewPCG(37, 2))
	for range 2000 {
		rel, line := randomPath(rng), 1+rng.IntN(5000)
		pos := Format(rel, line)
		gotRel, gotLine, ok := Parse(pos)
		if !ok || gotRel != rel || gotLine != line {
			t.Fatalf("Parse(Format(%q, %d)) = %q %q %d %v", rel, line, pos, gotRel, gotLine, ok)
		}
		if gotRel, gotLine, ok := Parse(pos + ",7"); !ok || gotRel != rel || gotLine != line {
			t.Fatalf("with a column: %q %d %v", gotRel, gotLine, ok)
		}
	}
	if got := Format("orders/orders.go", 42); got != "project:///orders/orders.go#42" {
		t.Errorf("Format = %s, want the engine's project:///orders/orders.go#42", got)
	}
	for _, bad := range []string{"", "orders.go:42", "file:///a.go#3", "project:///a.go", "project:///a.go#0", "project:///a.go#x", "project:///#3"} {
		if _, _, ok := Parse(bad); ok {
			t.Errorf("Parse(%q) accepted", bad)
		}
	}
}

// TestDeclaring: the declaring frame is the innermost inside the project root, for any
// stack of frames inside and outside it (the SDK, the components, the module cache, a
// vendored copy); none when no frame is inside; relative (-trimpath) frames never count.
func TestDeclaring(t *testing.T) {
	root := filepath.FromSlash("/home/team/infra")
	outside := []string{"/root/go/pkg/mod/github.com/pulumi/pulumi/sdk/v3@v3.200.0/go/pulumi/context.go",
		"/home/team/eventpipe/components/pipeline.go", "/home/team/infra-other/x.go", "/home/team/infra/vendor/github.com/eventpipe/eventpipe/components/topic.go",
		"github.com/team/infra/main.go", "/usr/local/go/src/runtime/proc.go"}
	inside := []string{"/home/team/infra/main.go", "/home/team/infra/orders/orders.go", "/home/team/infra/my dir/a#b.go"}
	rng := rand.New(rand.NewPCG(37, 3))
	for range 2000 {
		var frames []Frame
		want := ""
		for range rng.IntN(8) {
			f := Frame{Line: 1 + rng.IntN(900)}
			if rng.IntN(3) == 0 {
				f.File = filepath.FromSlash(inside[rng.IntN(len(inside))])
				if want == "" {
					rel, _ := filepath.Rel(root, f.File)
					want = Format(filepath.ToSlash(rel), f.Line)
				}
			} else {
				f.File = filepath.FromSlash(outside[rng.IntN(len(outside))])
			}
			frames = append(frames, f)
		}
		got, ok := Declaring(root, frames)
		if got != want || ok != (want != "") {
			t.Fatalf("Declaring(%v) = %q %v, want %q", frames, got, ok, want)
		}
		if ok {
			file, line, rok := Resolve(root, got)
			if !rok || fmt.Sprint(Frame{file, line}) == "" || !filepath.IsAbs(file) {
				t.Fatalf("Resolve(%q) = %s %d %v", got, file, line, rok)
			}
		}
	}
}

// TestFromURI reads the SDK's file:///ABSOLUTE positions, escaped characters included.
func TestFromURI(t *testing.T) {
	f, ok := FromURI("file:///home/team/my%20dir/a%23b.go", 12)
	if !ok || f.File != filepath.FromSlash("/home/team/my dir/a#b.go") || f.Line != 12 {
		t.Errorf("FromURI = %+v %v", f, ok)
	}
	for _, bad := range []struct {
		uri  string
		line int
	}{{"", 3}, {"file:///a.go", 0}, {"project:///a.go", 3}} {
		if _, ok := FromURI(bad.uri, bad.line); ok {
			t.Errorf("FromURI(%q, %d) accepted", bad.uri, bad.line)
		}
	}
}
