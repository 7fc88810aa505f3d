package engine_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/eventpipe/eventpipe/components"
	"github.com/eventpipe/eventpipe/internal/release"
	"github.com/eventpipe/eventpipe/internal/testing/gcpstandin"
	"github.com/eventpipe/eventpipe/internal/testing/gobuild"
	"github.com/pulumi/pulumi/sdk/v3/go/auto"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/events"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/optpreview"
	"github.com/pulumi/pulumi/sdk/v3/go/common/apitype"
)

// dataTypes hold data: an upgrade may never replace or delete one (a topic's or a
// subscription's backlog, a dead-letter subscription's dead letters, a TTL policy, the
// database, the store's secret).
var dataTypes = []string{
	"gcp:pubsub/topic:Topic", "gcp:pubsub/subscription:Subscription", "gcp:firestore/field:Field",
	"gcp:firestore/database:Database", "gcp:secretmanager/secret:Secret",
}

// TestMain removes the release's export after the tests.
func TestMain(m *testing.M) {
	code := m.Run()
	if dir, ok := releaseDir.Load().(string); ok {
		_ = os.RemoveAll(dir)
	}
	os.Exit(code)
}

// releaseDir is the folder releaseDriver exported the release to.
var releaseDir atomic.Value

// releaseDriver is scripts/release-commit.sh's commit of the last release, and its
// releasedriver (testdata) built from an export of that commit, once per test binary.
var releaseDriver = sync.OnceValues(func() ([2]string, error) {
	out, err := exec.Command(filepath.Join(repo, "scripts", "release-commit.sh")).Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		return [2]string{}, fmt.Errorf("scripts/release-commit.sh: %v: %s (the upgrade test needs the release history: a full clone)", err, stderr)
	}
	commit := strings.TrimSpace(string(out))
	dir, err := os.MkdirTemp("", "eventpipe-release-")
	if err != nil {
		return [2]string{}, err
	}
	releaseDir.Store(dir)
	archive := exec.Command("sh", "-c", "git archive --format=tar "+commit+" | tar -x -C "+dir)
	archive.Dir = repo
	if out, err := archive.CombinedOutput(); err != nil {
		return [2]string{}, fmt.Errorf("export %s: %v\n%s", commit, err, out)
	}
	driver, err := os.ReadFile(filepath.Join("testdata", "releasedriver", "main.go"))
	if err != nil {
		return [2]string{}, err
	}
	if err := os.MkdirAll(filepath.Join(dir, "cmd", "releasedriver"), 0o755); err != nil {
		return [2]string{}, err
	}
	if err := os.WriteFile(filepath.Join(dir, "cmd", "releasedriver", "main.go"), driver, 0o644); err != nil {
		return [2]string{}, err
	}
	// The release never imported the Automation API: its go.sum lacks those modules'
	// sums, which HEAD's has (the module cache holds them).
	sums, err := os.ReadFile(filepath.Join(repo, "go.sum"))
	if err != nil {
		return [2]string{}, err
	}
	f, err := os.OpenFile(filepath.Join(dir, "go.sum"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return [2]string{}, err
	}
	_, err = f.Write(sums)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return [2]string{}, err
	}
	bin := filepath.Join(dir, "releasedriver")
	build := exec.Command("go", "build", "-mod=mod", "-ldflags="+gobuild.LinkFlags, "-o", bin, "./cmd/releasedriver")
	build.Dir = dir
	build.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOSUMDB=off")
	if out, err := build.CombinedOutput(); err != nil {
		return [2]string{}, fmt.Errorf("build the release's driver at %s: %v\n%s", commit, err, out)
	}
	return [2]string{commit, bin}, nil
})

// TestUpgradeFromTheLastRelease deploys each shipped stack with the last release's code
// (its stack file as the release shipped it: a user's config does not change with an
// upgrade), then previews it with the code at HEAD: nothing that holds data (dataTypes)
// is replaced or deleted, and every other change is a row of CHANGELOG.md's section of
// release.Tag (what changes and what a user must do). The upgraded stack then goes up and
// its next preview has nothing to do.
func TestUpgradeFromTheLastRelease(t *testing.T) {
	e := pulumiEngine(t)
	rel, err := releaseDriver()
	if err != nil {
		t.Fatal(err)
	}
	commit, driver := rel[0], rel[1]
	t.Logf("upgrading from %s (scripts/release-commit.sh) to HEAD (%s)", commit, release.Tag)
	changelog := changelogRows(t, release.Tag)
	for _, name := range []string{"dev", "staging", "prod"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			file := "stacks/Pulumi." + name + ".yaml"
			show := exec.Command("git", "show", commit+":"+file)
			show.Dir = repo
			config, err := show.Output()
			if err != nil {
				t.Fatalf("git show %s:%s: %v", commit, file, err)
			}
			w := newWorkspace(t)
			if err := os.WriteFile(filepath.Join(w.work, "Pulumi."+name+".yaml"), config, 0o644); err != nil {
				t.Fatal(err)
			}
			projects := projectsIn(t, "eventpipe", config)
			// The release enabled no API: its users enabled every one by hand, long
			// enough ago for them and its grants to have propagated. And some of its
			// stacks could not come up in any number of `up`s (staging's and prod's
			// pulling consumer was created before its subscription's grant, which waited
			// for it: fixed since), so the stand-in takes the release's stacks as their
			// owners got them up, checking nothing.
			old := projects
			old[gcpstandin.EnvEnabledAPIs] = "*"
			old[gcpstandin.EnvNoChecks] = "true"
			run := exec.CommandContext(ctx, driver, name, w.work, filepath.Dir(filepath.Dir(e.cli)))
			run.Env = os.Environ()
			for k, v := range w.vars(old) {
				run.Env = append(run.Env, k+"="+v)
			}
			run.Env = append(run.Env, "PULUMI_HOME="+e.home)
			if out, err := run.CombinedOutput(); err != nil {
				t.Fatalf("the release's up: %v\n%s", err, out)
			}
			// The release ran for a while before its upgrade: its grants have taken
			// effect, on the stand-ins' clock.
			if err := gcpstandin.Advance(w.standin, 24*time.Hour); err != nil {
				t.Fatal(err)
			}
			d := w.stack(t, auto.SelectStackInlineSource, "eventpipe", name, components.Program(components.ProgramOptions{}), map[string]string{
				gcpstandin.EnvEnabledAPIs: "*", gcpstandin.EnvProjects: projects[gcpstandin.EnvProjects]})
			steps := make(chan events.EngineEvent)
			var seen []apitype.StepEventMetadata
			done := make(chan struct{})
			go func() {
				defer close(done)
				for ev := range steps {
					if ev.ResourcePreEvent != nil {
						seen = append(seen, ev.ResourcePreEvent.Metadata)
					}
				}
			}()
			pre, err := d.stack.Preview(ctx, optpreview.Diff(), optpreview.EventStreams(steps))
			<-done
			if err != nil {
				t.Fatalf("preview of the upgrade: %v", err)
			}
			for _, m := range seen {
				if m.Op == apitype.OpSame || m.Op == apitype.OpRead {
					continue
				}
				destructive := m.Op == apitype.OpReplace || m.Op == apitype.OpDelete || m.Op == apitype.OpCreateReplacement ||
					m.Op == apitype.OpDeleteReplaced || m.Op == apitype.OpDiscardReplaced
				if destructive && slices.Contains(dataTypes, m.Type) {
					t.Errorf("the upgrade would %s %s (it holds data): %v", m.Op, m.URN, m.Diffs)
				}
				t.Logf("upgrade of %s: %s %s %v", name, m.Op, m.URN, m.Diffs)
				if row := string(m.Op) + " " + m.Type; !changelog[row] {
					t.Errorf("the upgrade would %s %s (changed: %v), and CHANGELOG.md's %s section lists no `%s`", m.Op, m.URN, m.Diffs, release.Tag, row)
				}
			}
			t.Logf("upgrade of %s: %v", name, pre.ChangeSummary)
			if _, err := d.stack.Up(ctx); err != nil {
				t.Fatalf("up of the upgrade: %v", err)
			}
			again, err := d.stack.Preview(ctx, optpreview.Diff())
			if err != nil {
				t.Fatalf("preview after the upgrade: %v", err)
			}
			if n := count(again.ChangeSummary, apitype.OpCreate, apitype.OpUpdate, apitype.OpReplace, apitype.OpDelete); n != 0 {
				t.Errorf("preview after the upgrade: %v, want nothing to do:\n%s", again.ChangeSummary, again.StdOut)
			}
		})
	}
}

var changelogRow = regexp.MustCompile("^\\| `(create|update|replace|delete|create-replacement|delete-replaced) ([^`]+)` \\|")

// changelogRows are the changes CHANGELOG.md lists in the section of version tag: the
// `OP TYPE` of each row of its tables.
func changelogRows(t *testing.T, tag string) map[string]bool {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repo, "CHANGELOG.md"))
	if err != nil {
		t.Fatal(err)
	}
	head := "## " + strings.TrimPrefix(tag, "v")
	i := bytes.Index(data, []byte("\n"+head))
	if i < 0 {
		t.Fatalf("CHANGELOG.md has no section %q for release.Tag %s", head, tag)
	}
	section := data[i+1:]
	if j := bytes.Index(section[len(head):], []byte("\n## ")); j >= 0 {
		section = section[:len(head)+j]
	}
	rows := map[string]bool{}
	for _, line := range strings.Split(string(section), "\n") {
		if m := changelogRow.FindStringSubmatch(line); m != nil {
			rows[m[1]+" "+m[2]] = true
		}
	}
	return rows
}
