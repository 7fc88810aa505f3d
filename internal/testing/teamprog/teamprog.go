// Package teamprog builds a team's own Pulumi Go program the way a team has it: a
// module of its own that depends on eventpipe (this checkout, by a replace directive, as
// docs/deploy.md tells a team working from a clone), with its Pulumi.yaml and stack file,
// and runs its tests with `go test`, as the guide's TestPlan is run. Nothing is fetched:
// the module takes eventpipe's own requirements and go.sum, and GOPROXY=off.
package teamprog

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"testing"
)

// Path is the team module's path.
const Path = "example.com/team"

// Module is a team's module on disk.
type Module struct {
	// Dir is the module's folder.
	Dir string
}

// root is the eventpipe checkout this package is compiled from.
func root(t testing.TB) string {
	_, file, _, ok := runtime.Caller(0)
	if !ok || !filepath.IsAbs(file) {
		t.Fatalf("teamprog: cannot find the eventpipe checkout (built with -trimpath?)")
	}
	return filepath.Join(filepath.Dir(file), "..", "..", "..")
}

var moduleLine = regexp.MustCompile(`(?m)^module .*$`)

// New writes the module in a new temporary folder: go.mod (eventpipe's requirements,
// eventpipe itself replaced by this checkout), go.sum, and files (paths relative to the
// module, slash-separated) with their contents.
func New(t testing.TB, files map[string]string) *Module {
	t.Helper()
	src := root(t)
	gomod, err := os.ReadFile(filepath.Join(src, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	gosum, err := os.ReadFile(filepath.Join(src, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	abs, err := filepath.Abs(src)
	if err != nil {
		t.Fatal(err)
	}
	mod := moduleLine.ReplaceAll(gomod, []byte("module "+Path))
	mod = append(mod, []byte("\nrequire github.com/eventpipe/eventpipe v0.0.0\n\nreplace github.com/eventpipe/eventpipe => "+abs+"\n")...)
	m := &Module{Dir: t.TempDir()}
	write := func(name string, data []byte) {
		p := filepath.Join(m.Dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", mod)
	write("go.sum", gosum)
	for name, data := range files {
		write(name, []byte(data))
	}
	return m
}

// GoTest runs `go test args...` in the module with env added to the environment, offline,
// and returns its combined output and error.
func (m *Module) GoTest(t testing.TB, env []string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), "go", append([]string{"test"}, args...)...)
	cmd.Dir = m.Dir
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod -buildvcs=false", "GOPROXY=off", "GOWORK=off", "GOTOOLCHAIN=local")
	cmd.Env = append(cmd.Env, env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}
