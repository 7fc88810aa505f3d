package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/eventpipe/eventpipe/internal/testing/proctest"
)

// repoRoot is the module root (this package is cmd/consumer).
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// TestImportsOnlyConsumer keeps the binary lean: no Pulumi, no OPA, no CLI
// framework, and of this module only consumer packages, and leaves outside
// consumer/ that import the standard library alone (the one duration grammar,
// the one field error).
func TestImportsOnlyConsumer(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}\t{{.Standard}}\t{{join .Imports \" \"}}", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	forbidden := []string{"github.com/pulumi/", "github.com/open-policy-agent/", "github.com/spf13/cobra", "github.com/gruntwork-io/"}
	const module = "github.com/eventpipe/eventpipe/"
	standard := map[string]bool{}
	imports := map[string][]string{}
	var own []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Split(line, "\t")
		if len(fields) != 3 {
			t.Fatalf("go list -deps: unexpected line %q", line)
		}
		p := fields[0]
		standard[p] = fields[1] == "true"
		imports[p] = strings.Fields(fields[2])
		for _, f := range forbidden {
			if strings.HasPrefix(p, f) {
				t.Errorf("cmd/consumer depends on %s", p)
			}
		}
		if strings.HasPrefix(p, module) {
			own = append(own, p)
		}
	}
	for _, p := range own {
		rel := strings.TrimPrefix(p, module)
		if strings.HasPrefix(rel, "consumer/") || rel == "cmd/consumer" {
			continue
		}
		for _, imp := range imports[p] {
			if !standard[imp] {
				t.Errorf("cmd/consumer imports %s, outside consumer/ and not a leaf on the standard library: it imports %s", p, imp)
			}
		}
	}
	if len(own) < 5 {
		t.Fatalf("go list found only %d eventpipe packages: %s", len(own), out)
	}
}

// buildLine is one `go build` invocation: environment, flags, package.
type buildLine struct {
	env   []string
	flags []string
	pkg   string
}

var goBuild = regexp.MustCompile(`^((?:[A-Z_]+=\S+\s+)*)(?:\S*/)?go build (.*)$`)

// parseBuild splits a shell line running go build; -o and its value are
// dropped (the output path differs by design).
func parseBuild(t *testing.T, line string) buildLine {
	t.Helper()
	m := goBuild.FindStringSubmatch(strings.TrimSpace(line))
	if m == nil {
		t.Fatalf("not a go build line: %q", line)
	}
	var b buildLine
	b.env = strings.Fields(m[1])
	args := strings.Fields(m[2])
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "-o":
			i++
		case strings.HasPrefix(a, "-"):
			b.flags = append(b.flags, strings.ReplaceAll(a, `"`, ""))
		default:
			b.pkg = a
		}
	}
	slices.Sort(b.env)
	slices.Sort(b.flags)
	return b
}

// TestDockerfileMatchesMakefile: the image is built from the same package
// with the same flags as `make build-consumer` (which CI runs), and the
// runtime stage is a static, shell-less, non-root image.
func TestDockerfileMatchesMakefile(t *testing.T) {
	root := repoRoot(t)
	makeOut, err := exec.Command("make", "-s", "-n", "-C", root, "build-consumer", "GO=go").Output()
	if err != nil {
		t.Fatalf("make -n build-consumer: %v", err)
	}
	var makeLine string
	for _, l := range strings.Split(string(makeOut), "\n") {
		if strings.Contains(l, "go build") {
			makeLine = l
		}
	}
	df, err := os.Open(filepath.Join(root, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	defer df.Close()
	var froms, finalStage []string
	var dockerLine string
	sc := bufio.NewScanner(df)
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		if strings.HasPrefix(l, "FROM ") {
			froms = append(froms, l)
			finalStage = nil
			continue
		}
		finalStage = append(finalStage, l)
		if strings.HasPrefix(l, "RUN ") && strings.Contains(l, "go build") {
			dockerLine = strings.TrimPrefix(l, "RUN ")
		}
	}
	mk, dk := parseBuild(t, makeLine), parseBuild(t, dockerLine)
	if mk.pkg != "./cmd/consumer" || dk.pkg != mk.pkg {
		t.Fatalf("packages: make %q, Dockerfile %q", mk.pkg, dk.pkg)
	}
	if !slices.Equal(mk.flags, dk.flags) || !slices.Equal(mk.env, dk.env) {
		t.Fatalf("flags differ:\n make       %v %v\n Dockerfile %v %v", mk.env, mk.flags, dk.env, dk.flags)
	}
	if !slices.Contains(mk.env, "CGO_ENABLED=0") {
		t.Fatalf("the binary must be static (CGO_ENABLED=0): %v", mk.env)
	}
	if len(froms) < 2 {
		t.Fatalf("want a multi-stage build, got %v", froms)
	}
	final := froms[len(froms)-1]
	if !strings.Contains(final, "gcr.io/distroless/static") && !strings.HasPrefix(final, "FROM scratch") {
		t.Fatalf("final stage %q is not distroless static or scratch", final)
	}
	var user, entry string
	for _, l := range finalStage {
		switch {
		case strings.HasPrefix(l, "RUN "):
			t.Errorf("the runtime stage runs %q: it has no shell", l)
		case strings.HasPrefix(l, "USER "):
			user = strings.TrimPrefix(l, "USER ")
		case strings.HasPrefix(l, "ENTRYPOINT "):
			entry = strings.TrimPrefix(l, "ENTRYPOINT ")
		}
	}
	if user == "" || strings.HasPrefix(user, "root") || strings.HasPrefix(user, "0") {
		t.Errorf("runtime user %q: want a non-root user", user)
	}
	if !strings.HasPrefix(entry, `["`) {
		t.Errorf("ENTRYPOINT %q: use the exec (JSON) form, there is no shell", entry)
	}
}

// consumer is the binary the tests run, built on first use (consumerBinary)
// and removed by TestMain when the tests end.
var consumer = &proctest.Binary{Pkg: "."}

func TestMain(m *testing.M) {
	code := m.Run()
	consumer.Remove()
	os.Exit(code)
}

// consumerBinary builds the binary once per test run into a temporary
// directory. It uses the default build settings, so the packages compiled
// for the tests are reused; the release flags are checked against the
// Dockerfile above and measured by scripts/consumer-startup.sh.
func consumerBinary(t testing.TB) string { return consumer.Path(t) }
