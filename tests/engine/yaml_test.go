package engine_test

import (
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/eventpipe/eventpipe/components"
	"github.com/eventpipe/eventpipe/internal/testing/docblock"
	"github.com/eventpipe/eventpipe/internal/testing/gcpstandin"
	"github.com/pulumi/pulumi/sdk/v3/go/auto"
	"github.com/pulumi/pulumi/sdk/v3/go/common/apitype"
	"gopkg.in/yaml.v3"
)

// yamlProgram is a YAML program (its Pulumi.yaml, source) set up as users do: `pulumi
// package add` of the eventpipe provider plugin, then a stack through the YAML language
// host, against the stand-ins; projects is the stand-in's EnvProjects, env adds to its
// environment. It returns the stack and the stand-in's state folder.
func yamlProgram(t *testing.T, source, projects string, env map[string]string) (auto.Stack, string) {
	t.Helper()
	e := pulumiEngine(t)
	ctx := t.Context()
	work := t.TempDir()
	bin := e.providerDir
	yamlHost, err := filepath.Abs(filepath.Join(repo, ".tools", "bin"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(yamlHost, "pulumi-language-yaml")); err != nil {
		t.Fatalf("pulumi-language-yaml is not installed (%v): run make deps", err)
	}
	program := filepath.Join(work, "program")
	w := workspaceDirs{work: work, standin: filepath.Join(work, "gcp"), backend: filepath.Join(work, "backend")}
	for _, d := range []string{program, w.standin, w.backend} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(program, "Pulumi.yaml"), []byte(source), 0o644); err != nil {
		t.Fatal(err)
	}
	env = maps.Clone(env)
	env[gcpstandin.EnvProjects] = projects
	vars := w.vars(env)
	vars["PATH"] = yamlHost + string(os.PathListSeparator) + os.Getenv("PATH")
	vars["PULUMI_HOME"] = e.home
	add := exec.CommandContext(ctx, e.cli, "package", "add", filepath.Join(bin, "pulumi-resource-eventpipe"))
	add.Dir = program
	add.Env = os.Environ()
	for k, v := range vars {
		add.Env = append(add.Env, k+"="+v)
	}
	out, err := add.CombinedOutput()
	if _, statErr := os.Stat(filepath.Join(program, "sdks", "eventpipe-eventpipe")); statErr != nil {
		t.Fatalf("pulumi package add wrote no sdks/eventpipe-eventpipe (docs/provider-installation.md): %v\n%s", statErr, out)
	}
	// docs/provider-installation.md: with pulumi-language-yaml v1.25.0 the step after the SDK
	// fails ("method Link not implemented") and Pulumi.yaml is left unchanged; users add
	// the entry the CLI would have written, and run with the plugin's folder on PATH.
	if err != nil {
		if !strings.Contains(string(out), "method Link not implemented") {
			t.Fatalf("pulumi package add: %v\n%s", err, out)
		}
		f, err := os.OpenFile(filepath.Join(program, "Pulumi.yaml"), os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		_, err = f.WriteString("packages:\n  eventpipe:\n    source: eventpipe\n    version: 0.0.0-dev\n")
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if !strings.Contains(mustRead(t, filepath.Join(program, "Pulumi.yaml")), "packages:") {
		t.Errorf("Pulumi.yaml records no package")
	}
	vars["PATH"] = bin + string(os.PathListSeparator) + vars["PATH"]
	stack, err := auto.NewStackLocalSource(ctx, "dev", program, auto.Pulumi(e.cmd), auto.PulumiHome(e.home),
		auto.SecretsProvider("passphrase"), auto.EnvVars(vars))
	if err != nil {
		t.Fatal(err)
	}
	return stack, w.standin
}

// TestYAMLProgramOnAFreshProject deploys examples/yaml, a YAML program that does what a Go
// stack does, on a fresh project (Cloud Resource Manager on, the documented prerequisite;
// no other API beyond a new project's, no Firestore database; enablements and grants
// take time): its Project enables the APIs in order and waits, creates the database, and
// its pipeline grants the Cloud Run service agent the Shared VPC subnet and waits for
// its grants. The next preview has nothing to do.
func TestYAMLProgramOnAFreshProject(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	// The Shared VPC's host project has Compute Engine on: it holds the network.
	apis := append(slices.Clone(gcpstandin.DefaultAPIs), components.APIResourceManager, "acme-network/"+components.APICompute)
	stack, standin := yamlProgram(t, mustRead(t, filepath.Join(repo, "examples", "yaml", "Pulumi.yaml")), "acme-shop=210987654321",
		map[string]string{gcpstandin.EnvFirestoreDatabases: "", gcpstandin.EnvEnabledAPIs: strings.Join(apis, ",")})
	if _, err := stack.Up(ctx); err != nil {
		t.Fatalf("up: %v", err)
	}
	again, err := stack.Preview(ctx)
	if err != nil {
		t.Fatalf("second preview: %v", err)
	}
	if n := count(again.ChangeSummary, apitype.OpCreate, apitype.OpUpdate, apitype.OpReplace, apitype.OpDelete); n != 0 {
		t.Errorf("second preview: %v, want nothing to do:\n%s", again.ChangeSummary, again.StdOut)
	}
	ops := deployment{standin: standin}.ops(t)
	checkOrder(t, ops)
	before(t, ops, "create gcp:projects/service:Service api-cloudresourcemanager", "create gcp:projects/service:Service api-pubsub")
	before(t, ops, "create "+gcpstandin.SleepType+" project-apis-propagated", "create gcp:firestore/database:Database ")
	before(t, ops, "create gcp:firestore/database:Database ", "create gcp:firestore/field:Field ")
	before(t, ops, "create gcp:compute/subnetworkIAMMember:SubnetworkIAMMember ", "create gcp:cloudrunv2/service:Service ")
	before(t, ops, "create "+gcpstandin.SleepType+" orders-grants-propagated", "create gcp:cloudrunv2/service:Service ")
	state, err := gcpstandin.ReadState(standin)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range state {
		if r.Type == "gcp:compute/subnetworkIAMMember:SubnetworkIAMMember" &&
			(r.State["project"] != "acme-network" || r.State["member"] != "serviceAccount:service-210987654321@serverless-robot-prod.iam.gserviceaccount.com") {
			t.Errorf("Shared VPC grant %v: want the Cloud Run service agent in the host project", r.State)
		}
	}
}

// TestReadmeYAMLProgramUnderTheRealEngine runs the YAML program of docs/deploy.md (the
// deploy guide, moved out of the README) as users do:
// `pulumi package add` of the eventpipe provider plugin, then `pulumi up` through the
// YAML language host, against the stand-in gcp plugin (APIs managed outside the stack),
// then destroy.
func TestReadmeYAMLProgramUnderTheRealEngine(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	example := docblock.After(t, "docs/deploy.md", "\n## From TypeScript, Python or YAML\n", "yaml")
	// In Google Cloud the example's project exists, with the number it configures.
	var doc struct {
		Resources map[string]struct {
			Properties struct {
				Project       string `yaml:"project"`
				ProjectNumber string `yaml:"projectNumber"`
			} `yaml:"properties"`
		} `yaml:"resources"`
	}
	if err := yaml.Unmarshal([]byte(example), &doc); err != nil {
		t.Fatal(err)
	}
	var projects []string
	for _, r := range doc.Resources {
		projects = append(projects, r.Properties.Project+"="+r.Properties.ProjectNumber)
	}
	stack, standin := yamlProgram(t, "name: yaml-orders\nruntime: yaml\n"+example, strings.Join(projects, ","),
		map[string]string{gcpstandin.EnvEnabledAPIs: "*"})
	// storeSecret is for a URL holding a password (a Firestore URL there is refused: its
	// datastore grant is declared from a plain store).
	if err := stack.SetConfig(ctx, "storeUrl", auto.ConfigValue{Value: "postgres://orders:engine-test@db.acme-shop.example/orders", Secret: true}); err != nil {
		t.Fatal(err)
	}
	up, err := stack.Up(ctx)
	if err != nil {
		t.Fatalf("up: %v", err)
	}
	if got := (*up.Summary.ResourceChanges)["create"]; got < 10 {
		t.Errorf("the YAML program created %d resources, want the pipeline's", got)
	}
	if topic, ok := up.Outputs["topic"]; !ok || !strings.Contains(topic.Value.(string), "/topics/") {
		t.Errorf("output topic = %v, want a topic id", up.Outputs["topic"])
	}
	again, err := stack.Preview(ctx)
	if err != nil {
		t.Fatalf("second preview: %v", err)
	}
	if n := count(again.ChangeSummary, apitype.OpCreate, apitype.OpUpdate, apitype.OpReplace, apitype.OpDelete); n != 0 {
		t.Errorf("second preview: %v, want nothing to do", again.ChangeSummary)
	}
	// The example sets no environment, so its topics and subscriptions are protected (a
	// subscription's backlog is lost with it): destroy refuses them and leaves them whole.
	_, err = stack.Destroy(ctx)
	if err == nil || !strings.Contains(err.Error(), "cannot be deleted") {
		t.Fatalf("destroy of the protected example: %v, want its subscriptions refused", err)
	}
	left, err := gcpstandin.ReadState(standin)
	if err != nil {
		t.Fatal(err)
	}
	subs := 0
	for _, r := range left {
		if r.Type == "gcp:pubsub/subscription:Subscription" {
			subs++
		}
	}
	if subs == 0 {
		t.Errorf("destroy removed the protected subscriptions")
	}
}
