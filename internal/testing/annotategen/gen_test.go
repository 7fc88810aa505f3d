package annotategen

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/eventpipe/eventpipe/internal/annotate"
)

type sample struct {
	A string `pulumi:"a"`
	B int    `pulumi:"b,optional"`
}

func (x *sample) Annotate(a annotate.Annotator) {
	a.SetToken("index", "Sample")
	a.Describe(x, "A sample.")
	a.Describe(&x.A, "The a.")
}

func TestUndescribedFindsWhatIsMissing(t *testing.T) {
	if got := Undescribed(&sample{}); len(got) != 1 || got[0] != "B" {
		t.Errorf("Undescribed = %v, want [B]", got)
	}
}

func TestGenerate(t *testing.T) {
	dir := t.TempDir()
	src := `package p

// Args configure a thing.
type Args struct {
	// Name is the thing's name.
	Name string ` + "`pulumi:\"name\"`" + `
	// Internal is not exposed.
	Internal string
}
`
	if err := os.WriteFile(filepath.Join(dir, "p.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := Generate(dir, "p", func(n string) string { return "X" + n })
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`a.SetToken("index", "XArgs")`, `a.Describe(x, "Args configure a thing.")`, `a.Describe(&x.Name, "The thing's name.")`} {
		if !strings.Contains(string(out), want) {
			t.Errorf("generated source lacks %s:\n%s", want, out)
		}
	}
	if strings.Contains(string(out), "Internal") {
		t.Error("a field without a pulumi tag was annotated")
	}
	undocumented := strings.Replace(src, "	// Name is the thing's name.\n", "", 1)
	if err := os.WriteFile(filepath.Join(dir, "p.go"), []byte(undocumented), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Generate(dir, "p", func(n string) string { return n }); err == nil || !strings.Contains(err.Error(), "Args.Name") {
		t.Errorf("an exposed field without a doc comment: err = %v", err)
	}
}
