// Package engine_test runs eventpipe's stacks under the real Pulumi engine: the Pulumi
// CLI `make deps` builds (tools/pulumi), driving the shared program as an Automation API
// inline program, against the test-only stand-in gcp and time providers
// (internal/testing/gcpstandin), which refuse what Google Cloud's APIs refuse on a first
// and a second `pulumi up` and read resources back as the provider does. Each shipped
// stack is previewed, deployed, previewed again (no changes), changed in a field that
// replaces a subscription (replaced in dev, refused by protect in prod) and destroyed;
// each is also deployed with the last release's code and upgraded (upgrade_test.go).
//
// The stand-in runs as a project that had Cloud Resource Manager enabled before the first
// `up` (the documented prerequisite) and an existing Firestore database, where API
// enablements and IAM grants take Google's delays to take effect (a minute, two minutes:
// gcpstandin.DefaultAPIPropagation, DefaultGrantPropagation), and the stacks wait their
// production waits (eventpipe:setup's defaults) for them. Both are judged on the
// stand-ins' clock, which a wait (time_sleep) moves forward at once instead of sleeping
// (gcpstandin's clock.go): no test waits for either in real time.
package engine_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/eventpipe/eventpipe/components"
	"github.com/eventpipe/eventpipe/internal/testing/gcpstandin"
	"github.com/eventpipe/eventpipe/internal/testing/gobuild"
	"github.com/pulumi/pulumi/sdk/v3/go/auto"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/optdestroy"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/optpreview"
	"github.com/pulumi/pulumi/sdk/v3/go/common/apitype"
	"github.com/pulumi/pulumi/sdk/v3/go/common/tokens"
	"github.com/pulumi/pulumi/sdk/v3/go/common/workspace"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"gopkg.in/yaml.v3"
)

var repo = filepath.Join("..", "..")

// engine is the Pulumi CLI and a Pulumi home with the stand-in gcp plugin installed,
// shared by the tests of one run, and the folders of the plugins tests put on PATH.
type engine struct {
	cmd  auto.PulumiCommand
	cli  string
	home string
	// providerDir holds pulumi-resource-eventpipe (the YAML programs' provider), alone:
	// the CLI would take any other plugin on PATH as an ambient one.
	providerDir string
	// analyzerDir holds pulumi-analyzer-policy-eventpipe (the policy pack's), alone.
	analyzerDir string
}

var (
	engineOnce sync.Once
	shared     engine
	engineErr  error
)

// plugins are the plugin commands the tests build, by folder of engine (or "" for the
// stand-ins, which pulumiEngine installs into the Pulumi home).
var plugins = []struct{ pkg, folder string }{
	{"./internal/testing/gcpstandin/cmd/pulumi-resource-gcp", ""},
	{"./internal/testing/gcpstandin/cmd/pulumi-resource-time", ""},
	{"./cmd/pulumi-resource-eventpipe", "provider"},
	{"./cmd/pulumi-analyzer-policy-eventpipe", "analyzer"},
}

// pulumiEngine builds the plugins the tests run (in one go build, once per test binary)
// and installs the stand-ins into a fresh Pulumi home, once.
func pulumiEngine(t *testing.T) engine {
	t.Helper()
	engineOnce.Do(func() { shared, engineErr = newEngine() })
	if engineErr != nil {
		t.Fatal(engineErr)
	}
	return shared
}

func newEngine() (engine, error) {
	cli, err := filepath.Abs(filepath.Join(repo, ".tools", "bin", "pulumi"))
	if err == nil {
		cli, err = filepath.EvalSymlinks(cli)
	}
	if err != nil {
		return engine{}, fmt.Errorf("the Pulumi CLI is not installed (%v): run make deps", err)
	}
	// auto.NewPulumiCommand wants ROOT/bin/pulumi.
	cmd, err := auto.NewPulumiCommand(&auto.PulumiCommandOptions{Root: filepath.Dir(filepath.Dir(cli))})
	if err != nil {
		return engine{}, fmt.Errorf("the Pulumi CLI at %s: %w", cli, err)
	}
	dir, err := os.MkdirTemp("", "eventpipe-engine-")
	if err != nil {
		return engine{}, err
	}
	built := filepath.Join(dir, "build")
	pkgs := make([]string, len(plugins))
	for i, p := range plugins {
		pkgs[i] = p.pkg
	}
	if err := gobuild.Build(context.Background(), repo, built, pkgs...); err != nil {
		return engine{}, fmt.Errorf("build the plugins: %w", err)
	}
	e := engine{cmd: cmd, cli: cli, home: filepath.Join(dir, "home")}
	for _, p := range plugins {
		if p.folder == "" {
			continue
		}
		folder := filepath.Join(dir, p.folder)
		if err := os.Mkdir(folder, 0o755); err != nil {
			return engine{}, err
		}
		if err := os.Rename(filepath.Join(built, path.Base(p.pkg)), filepath.Join(folder, path.Base(p.pkg))); err != nil {
			return engine{}, err
		}
		switch p.folder {
		case "provider":
			e.providerDir = folder
		case "analyzer":
			e.analyzerDir = folder
		}
	}
	// The stand-ins: gcp, and time for the waits (time_sleep).
	for _, p := range []struct{ name, version string }{{"gcp", gcpstandin.Version}, {"time", gcpstandin.TimeVersion}} {
		install := exec.Command(cli, "plugin", "install", "resource", p.name, p.version, "--file", filepath.Join(built, "pulumi-resource-"+p.name))
		install.Env = append(os.Environ(), "PULUMI_HOME="+e.home, "PULUMI_SKIP_UPDATE_CHECK=true")
		if out, err := install.CombinedOutput(); err != nil {
			return engine{}, fmt.Errorf("pulumi plugin install %s: %v\n%s", p.name, err, out)
		}
	}
	return e, nil
}

// deployment is one stack of a program under the real engine.
type deployment struct {
	stack   auto.Stack
	standin string
}

// deploy sets up stack name of program (its config copied from configFile) with a file
// backend and the stand-in's state folder; env adds to the CLI's environment (the
// stand-in's EnvEnabledAPIs, PATH for plugins).
func deploy(t *testing.T, name, configFile string, program pulumi.RunFunc, env map[string]string) deployment {
	t.Helper()
	return deployConfig(t, "eventpipe", name, []byte(mustRead(t, configFile)), program, env)
}

// testStore is the store URL the tests set where a stack file keeps its store secret.
const testStore = "postgres://orders:engine-test@10.0.0.5/orders"

// withoutSecretStore is config without its secure eventpipe:store, and whether it had one.
func withoutSecretStore(t *testing.T, config []byte) ([]byte, bool) {
	t.Helper()
	var doc map[string]any
	if err := yaml.Unmarshal(config, &doc); err != nil {
		t.Fatal(err)
	}
	cfg, _ := doc["config"].(map[string]any)
	if _, secure := cfg["eventpipe:store"].(map[string]any); !secure {
		return config, false
	}
	delete(cfg, "eventpipe:store")
	out, err := yaml.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return out, true
}

// standinEnv is the stand-in's environment for a project that had Cloud Resource Manager
// enabled before the first `up` (besides the APIs every new project has) and has its
// Firestore (default) database, with Google's propagation delays; env overrides it.
func standinEnv(env map[string]string) map[string]string {
	vars := map[string]string{
		gcpstandin.EnvEnabledAPIs:        strings.Join(append(slices.Clone(gcpstandin.DefaultAPIs), components.APIResourceManager), ","),
		gcpstandin.EnvFirestoreDatabases: "*",
	}
	maps.Copy(vars, env)
	return vars
}

// withWaits is a stack file's content config with eventpipe:setup's waits set to d
// (projectName's namespace: orders:… programs set none).
func withWaits(t *testing.T, config []byte, d string) []byte {
	t.Helper()
	var doc map[string]any
	if err := yaml.Unmarshal(config, &doc); err != nil {
		t.Fatal(err)
	}
	cfg, _ := doc["config"].(map[string]any)
	setup, _ := cfg["eventpipe:setup"].(map[string]any)
	if setup == nil {
		setup = map[string]any{}
	}
	setup["apiPropagation"], setup["grantPropagation"] = d, d
	cfg["eventpipe:setup"] = setup
	out, err := yaml.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// workspaceDirs is a deployment's folders: the Pulumi project's, the stand-in's state and
// the file backend's.
type workspaceDirs struct{ work, standin, backend string }

func newWorkspace(t *testing.T) workspaceDirs {
	t.Helper()
	work := t.TempDir()
	w := workspaceDirs{work: work, standin: filepath.Join(work, "gcp"), backend: filepath.Join(work, "backend")}
	for _, d := range []string{w.standin, w.backend} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return w
}

// vars is the environment of the Pulumi CLI (and so of the plugins) in w.
//
// PULUMI_SKIP_CHECKPOINTS: the CLI saves the stack's state once, when an operation ends
// (failed or not), instead of after every step as well (pulumi/pulumi#10668, the
// variable's doc in sdk/go/common/env; backend.NewSnapshotManager's unsafeServiceLoop).
// The steps, and so every outcome and state the tests check, are the same; the
// intermediate saves, which only a crash mid-operation would read, were about a quarter
// of the CLI's CPU in these tests (docs/benchmarks.md, issue 38).
//
// GOGC: the CLI and the plugins it starts are short-lived Go processes whose heaps stay
// small (the CLI's peak resident memory about 100 MB either way); collecting at five
// times the live heap instead of twice cut the CLI's CPU by about a tenth, measured side
// by side (docs/benchmarks.md, issue 38). Nothing else in them changes.
func (w workspaceDirs) vars(env map[string]string) map[string]string {
	vars := map[string]string{
		"PULUMI_BACKEND_URL":                          "file://" + w.backend,
		"PULUMI_CONFIG_PASSPHRASE":                    "engine-test",
		"PULUMI_SKIP_UPDATE_CHECK":                    "true",
		"PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION": "true",
		"PULUMI_SKIP_CHECKPOINTS":                     "true",
		"GOGC":                                        "400",
		gcpstandin.EnvDir:                             w.standin,
	}
	maps.Copy(vars, standinEnv(env))
	return vars
}

// deployConfig is deploy for stack name of project, its stack file's content config.
func deployConfig(t *testing.T, projectName, name string, config []byte, program pulumi.RunFunc, env map[string]string) deployment {
	t.Helper()
	w := newWorkspace(t)
	if err := os.WriteFile(filepath.Join(w.work, "Pulumi."+name+".yaml"), config, 0o644); err != nil {
		t.Fatal(err)
	}
	return w.stack(t, auto.NewStackInlineSource, projectName, name, program, env)
}

// stackOpener is auto.NewStackInlineSource (a stack w's backend does not have: `stack
// init` alone, without the failing `stack select` an upsert runs first) or
// auto.SelectStackInlineSource (one it has).
type stackOpener func(context.Context, string, string, pulumi.RunFunc, ...auto.LocalWorkspaceOption) (auto.Stack, error)

// stack is the stack name of projectName in w (its config already there), opened with
// open and run with program.
func (w workspaceDirs) stack(t *testing.T, open stackOpener, projectName, name string, program pulumi.RunFunc, env map[string]string) deployment {
	t.Helper()
	e := pulumiEngine(t)
	project := workspace.Project{Name: tokens.PackageName(projectName), Runtime: workspace.NewProjectRuntimeInfo("go", nil)}
	stack, err := open(t.Context(), name, projectName, program,
		auto.Pulumi(e.cmd), auto.WorkDir(w.work), auto.Project(project), auto.PulumiHome(e.home),
		auto.SecretsProvider("passphrase"), auto.EnvVars(w.vars(env)))
	if err != nil {
		t.Fatalf("stack %s: %v", name, err)
	}
	return deployment{stack: stack, standin: w.standin}
}

// ops reads the stand-in's operation log: "create TYPE NAME" lines.
func (d deployment) ops(t *testing.T) []string {
	t.Helper()
	f, err := os.Open(filepath.Join(d.standin, gcpstandin.OpsLog))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	return lines
}

func count(summary map[apitype.OpType]int, ops ...apitype.OpType) int {
	n := 0
	for _, op := range ops {
		n += summary[op]
	}
	return n
}

// TestShippedStacksUnderTheRealEngine takes every shipped stack through its first day:
// preview, up (every prerequisite the stand-in enforces met by the engine's order), a
// re-preview with nothing to do, a filter change (a subscription replaced in an
// unprotected stack, refused in a protected one), and destroy.
func TestShippedStacksUnderTheRealEngine(t *testing.T) {
	stacks, err := filepath.Glob(filepath.Join(repo, "stacks", "Pulumi.*.yaml"))
	if err != nil || len(stacks) == 0 {
		t.Fatalf("no stacks: %v", err)
	}
	// The handler examples are stacks of the same program (a consumer with a handler).
	handlers, err := filepath.Glob(filepath.Join(repo, "examples", "handlers", "*", "Pulumi.*.yaml"))
	if err != nil || len(handlers) == 0 {
		t.Fatalf("no handler example stacks: %v", err)
	}
	for _, file := range append(stacks, handlers...) {
		name := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(file), "Pulumi."), ".yaml")
		rel, _ := filepath.Rel(repo, file)
		t.Run(filepath.ToSlash(rel), func(t *testing.T) {
			t.Parallel()
			firstDay(t, name, file)
		})
	}
}

func firstDay(t *testing.T, name, file string) {
	ctx := t.Context()
	config, store := withoutSecretStore(t, []byte(mustRead(t, file)))
	d := deployConfig(t, "eventpipe", name, config, components.Program(components.ProgramOptions{}), projectsOf(t, file))
	if store {
		// The file's secure value is encrypted with the author's passphrase: the test
		// sets a store with credentials as a secret instead, as the file says to.
		if err := d.stack.SetConfig(ctx, "eventpipe:store", auto.ConfigValue{Value: testStore, Secret: true}); err != nil {
			t.Fatal(err)
		}
	}
	created := firstUpAndRepreview(t, d)

	protected := strings.Contains(mustRead(t, file), "protect: true")
	pre, err := changeFilter(t, d, ctx)
	if protected {
		// The engine refuses to plan a protected resource's replacement: the preview
		// fails, saying why.
		if err == nil || !strings.Contains(err.Error(), "marked for protection") {
			t.Errorf("a filter change in a protected stack previews %v (%v), want refused by protect", pre.ChangeSummary, err)
		}
		return
	}
	if err != nil {
		t.Fatalf("preview of a filter change: %v", err)
	}
	if pre.ChangeSummary[apitype.OpReplace] == 0 {
		t.Errorf("a filter change previews %v, want a replace", pre.ChangeSummary)
	}
	if _, err := d.stack.Up(ctx); err != nil {
		t.Fatalf("up after a filter change: %v", err)
	}
	var replaced bool
	for _, op := range d.ops(t)[len(created):] {
		if strings.HasPrefix(op, "create gcp:pubsub/subscription:Subscription") {
			replaced = true
		}
	}
	if !replaced {
		t.Errorf("a filter change did not replace its subscription: ops %v", d.ops(t)[len(created):])
	}
	if _, err := d.stack.Destroy(ctx, optdestroy.Remove()); err != nil {
		t.Fatalf("destroy: %v", err)
	}
	left, err := gcpstandin.ReadState(d.standin)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 0 {
		var names []string
		for urn := range left {
			names = append(names, urn)
		}
		slices.Sort(names)
		t.Errorf("destroy left %d resources: %v", len(left), names)
	}
}

// firstUpAndRepreview previews d's first up (creates only), runs it (creating what the
// preview announced, each resource once), previews again (nothing to do) and returns the
// stand-in's ops of the up.
func firstUpAndRepreview(t *testing.T, d deployment) []string {
	t.Helper()
	ctx := t.Context()
	pre, err := d.stack.Preview(ctx)
	if err != nil {
		t.Fatalf("preview: %v", err)
	}
	creates := pre.ChangeSummary[apitype.OpCreate]
	if creates == 0 || count(pre.ChangeSummary, apitype.OpUpdate, apitype.OpReplace, apitype.OpDelete) != 0 {
		t.Fatalf("first preview: %v, want only creates", pre.ChangeSummary)
	}
	up, err := d.stack.Up(ctx)
	if err != nil {
		t.Fatalf("up: %v", err)
	}
	if got := (*up.Summary.ResourceChanges)["create"]; got != creates {
		t.Errorf("up created %d, the preview announced %d", got, creates)
	}
	created := d.ops(t)
	checkOrder(t, created)

	again, err := d.stack.Preview(ctx)
	if err != nil {
		t.Fatalf("second preview: %v", err)
	}
	if n := count(again.ChangeSummary, apitype.OpCreate, apitype.OpUpdate, apitype.OpReplace, apitype.OpDelete); n != 0 {
		t.Errorf("second preview: %v, want nothing to do", again.ChangeSummary)
	}
	return created
}

// changeFilter sets a filter on the first subscription of the stack's first pipeline and
// previews the change.
func changeFilter(t *testing.T, d deployment, ctx context.Context) (auto.PreviewResult, error) {
	t.Helper()
	cfg, err := d.stack.GetAllConfig(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var key string
	for k := range cfg {
		if k == "eventpipe:pipelines" {
			key = k
		}
	}
	if key == "" {
		t.Fatalf("no eventpipe:pipelines in %v", cfg)
	}
	pipeline, sub := firstSubscription(t, cfg[key].Value)
	path := fmt.Sprintf("eventpipe:pipelines.%s.subscriptions.%s.filter", pipeline, sub)
	if err := d.stack.SetConfigWithOptions(ctx, path, auto.ConfigValue{Value: `attributes.kind = "changed"`}, &auto.ConfigOptions{Path: true}); err != nil {
		t.Fatal(err)
	}
	return d.stack.Preview(ctx, optpreview.Diff())
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// firstSubscription returns the first pipeline (by name) with a subscription and its first
// subscription key, from the eventpipe:pipelines config value (JSON).
func firstSubscription(t *testing.T, value string) (string, string) {
	t.Helper()
	var pipelines map[string]struct {
		Subscriptions map[string]json.RawMessage `json:"subscriptions"`
	}
	if err := json.Unmarshal([]byte(value), &pipelines); err != nil {
		t.Fatalf("eventpipe:pipelines: %v", err)
	}
	names := make([]string, 0, len(pipelines))
	for n := range pipelines {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		subs := make([]string, 0, len(pipelines[n].Subscriptions))
		for s := range pipelines[n].Subscriptions {
			subs = append(subs, s)
		}
		slices.Sort(subs)
		if len(subs) > 0 {
			return n, subs[0]
		}
	}
	t.Fatal("no pipeline has a subscription")
	return "", ""
}

// checkOrder holds the stand-in's log of a first up: every resource created once, and
// no resource deleted (a first up replaces nothing); APIs enabled on the way.
func checkOrder(t *testing.T, ops []string) {
	t.Helper()
	seen := map[string]bool{}
	for _, op := range ops {
		verb, what, _ := strings.Cut(op, " ")
		if verb == "enable" {
			continue
		}
		if verb != "create" {
			t.Errorf("first up: %s", op)
			continue
		}
		if seen[what] {
			t.Errorf("first up created %s twice", what)
		}
		seen[what] = true
	}
}

// projectsOf tells the stand-in the project a stack config names, with its configured
// number: in Google Cloud the project exists with that number.
func projectsOf(t *testing.T, file string) map[string]string {
	t.Helper()
	return projectsIn(t, "eventpipe", []byte(mustRead(t, file)))
}

// projectsIn is projectsOf for a stack file's content config, whose project and number
// are namespace:project and namespace:projectNumber.
func projectsIn(t *testing.T, namespace string, config []byte) map[string]string {
	t.Helper()
	var doc struct {
		Config map[string]any `yaml:"config"`
	}
	if err := yaml.Unmarshal(config, &doc); err != nil {
		t.Fatalf("stack config: %v", err)
	}
	project, _ := doc.Config[namespace+":project"].(string)
	number, _ := doc.Config[namespace+":projectNumber"].(string)
	return map[string]string{gcpstandin.EnvProjects: project + "=" + number}
}
