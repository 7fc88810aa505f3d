package program_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/eventpipe/eventpipe/internal/srcpos"
	"github.com/eventpipe/eventpipe/internal/testing/teamprog"
	"github.com/eventpipe/eventpipe/policies/check"
)

// call is one declaring call a generated program makes: a component or a raw resource,
// at a line of a file, inside helpers nested depth deep.
type call struct {
	kind, name string
	depth      int
	file       string
	line       int
	// finding is the rule the call's resources must be found breaking ("" none).
	finding string
}

// source writes a generated Go file and knows the line it is on.
type source struct {
	b    bytes.Buffer
	line int
}

func (s *source) printf(format string, a ...any) {
	text := fmt.Sprintf(format, a...)
	s.line += strings.Count(text, "\n")
	s.b.WriteString(text)
}

// teamPrograms generates n programs of the shapes teams write, each in its own file of
// package team: pipelines, standalone subscriptions and raw GCP subscriptions, some
// declared straight in the program function, some in helper functions nested up to three
// deep, with comments and arguments spread over lines so every call sits on its own line.
// A subscription opts out of dead-lettering (EP015) or a raw one has no dead-letter
// policy (EP001) at random. It returns the files and every declaring call.
func teamPrograms(rng *rand.Rand, n int) (map[string]string, []call) {
	files := map[string]string{}
	var calls []call
	for p := range n {
		file := fmt.Sprintf("prog%d.go", p)
		s := &source{line: 1}
		s.printf("package team\n\nimport (\n\t\"github.com/pulumi/pulumi-gcp/sdk/v8/go/gcp/pubsub\"\n\t\"github.com/pulumi/pulumi/sdk/v3/go/pulumi\"\n\t\"github.com/pulumi/pulumi/sdk/v3/go/pulumi/config\"\n\n\t\"github.com/eventpipe/eventpipe/components\"\n\t\"github.com/eventpipe/eventpipe/spec\"\n)\n\n")
		s.printf("// Each file imports what any program may use.\nvar (\n\t_ = pubsub.NewSubscription\n\t_ = components.NewPipeline\n\t_ spec.Subscription\n)\n\n")
		var body []string // the program function's statements
		k := 1 + rng.IntN(4)
		for c := range k {
			kinds := []string{"pipeline", "subscription", "raw"}
			kind, depth := kinds[rng.IntN(3)], rng.IntN(4)
			if g := len(calls); g < 2*len(kinds) {
				// The first calls make every kind once inline and once nested.
				kind, depth = kinds[g%len(kinds)], min(g/len(kinds), 1)*(1+rng.IntN(3))
			}
			name := fmt.Sprintf("p%dc%d", p, c)
			cl := call{kind: kind, name: name, depth: depth, file: file}
			optOut := rng.IntN(2) == 0
			switch {
			case kind == "raw":
				cl.finding = "EP001"
			case optOut:
				cl.finding = "EP015"
			}
			// The helpers: helper0 calls helper1 ... the deepest makes the call.
			helper := func(d int) string { return fmt.Sprintf("declare%s_%d", strings.ToUpper(name[:1])+name[1:], d) }
			if depth == 0 {
				body = append(body, "") // placeholder: the call goes inline
			} else {
				body = append(body, fmt.Sprintf("\tif err := %s(ctx, cfg); err != nil {\n\t\treturn err\n\t}\n", helper(0)))
			}
			emit := func(indent string) {
				for range rng.IntN(3) {
					s.printf("%s// a comment a team wrote\n", indent)
				}
				cl.line = s.line
				sep := map[bool]string{true: "\n" + indent + "\t", false: " "}[rng.IntN(2) == 0]
				dl := ""
				if optOut {
					dl = `, DeadLetter: &spec.DeadLetter{OptOut: true, Reason: "replays from the source"}`
				}
				switch kind {
				case "pipeline":
					s.printf("%s_, err := components.NewPipeline(ctx, %q, &components.PipelineArgs{%s", indent, name, sep)
					s.printf("Project: pulumi.String(cfg.Require(\"project\")), ProjectNumber: pulumi.String(cfg.Require(\"projectNumber\")),%s", sep)
					s.printf("Consumer: spec.Consumer{Image: pulumi.String(cfg.Require(\"consumerImage\")), StoreSecret: cfg.RequireSecret(\"storeUrl\")},%s", sep)
					s.printf("Subscriptions: map[string]spec.Subscription{\"main\": {Delivery: \"push\"%s}},\n%s})\n", dl, indent)
				case "subscription":
					s.printf("%s_, err := components.NewSubscription(ctx, %q, &components.SubscriptionArgs{%s", indent, name, sep)
					s.printf("Project: pulumi.String(cfg.Require(\"project\")), ProjectNumber: pulumi.String(cfg.Require(\"projectNumber\")),%s", sep)
					s.printf("Topic: pulumi.String(\"projects/acme-data-prod/topics/shared\"),%s", sep)
					s.printf("Subscription: spec.Subscription{Delivery: \"pull\", Subscribers: []string{\"serviceAccount:loader@acme-data-prod.iam.gserviceaccount.com\"}%s},\n%s})\n", dl, indent)
				case "raw":
					s.printf("%s_, err := pubsub.NewSubscription(ctx, %q, &pubsub.SubscriptionArgs{%s", indent, name, sep)
					s.printf("Project: pulumi.String(cfg.Require(\"project\")), Topic: pulumi.String(\"projects/acme-data-prod/topics/shared\"),\n%s})\n", indent)
				}
				s.printf("%sif err != nil {\n%s\treturn err\n%s}\n", indent, indent, indent)
			}
			if depth == 0 {
				// Written into the program function below; remember where.
				calls = append(calls, cl)
				continue
			}
			for d := range depth {
				s.printf("// %s declares part of the team's %s.\nfunc %s(ctx *pulumi.Context, cfg *config.Config) error {\n", helper(d), kind, helper(d))
				if d < depth-1 {
					s.printf("\treturn %s(ctx, cfg)\n}\n\n", helper(d+1))
					continue
				}
				emit("\t")
				s.printf("\treturn nil\n}\n\n")
			}
			calls = append(calls, cl)
		}
		// The program function: inline calls are emitted now, in order.
		s.printf("// Program%d is a team's program.\nfunc Program%d(ctx *pulumi.Context) error {\n\tcfg := config.New(ctx, \"\")\n", p, p)
		for i, stmt := range body {
			if stmt != "" {
				s.printf("%s", stmt)
				continue
			}
			// Find this inline call among calls (the i-th of program p).
			idx := len(calls) - k + i
			cl := &calls[idx]
			s.printf("\t{\n")
			for range rng.IntN(3) {
				s.printf("\t\t// a comment a team wrote\n")
			}
			cl.line = s.line
			dl := ""
			if cl.finding == "EP015" {
				dl = `, DeadLetter: &spec.DeadLetter{OptOut: true, Reason: "replays from the source"}`
			}
			switch cl.kind {
			case "pipeline":
				s.printf("\t\t_, err := components.NewPipeline(ctx, %q, &components.PipelineArgs{\n", cl.name)
				s.printf("\t\t\tProject: pulumi.String(cfg.Require(\"project\")), ProjectNumber: pulumi.String(cfg.Require(\"projectNumber\")),\n")
				s.printf("\t\t\tConsumer: spec.Consumer{Image: pulumi.String(cfg.Require(\"consumerImage\")), StoreSecret: cfg.RequireSecret(\"storeUrl\")},\n")
				s.printf("\t\t\tSubscriptions: map[string]spec.Subscription{\"main\": {Delivery: \"push\"%s}},\n\t\t})\n", dl)
			case "subscription":
				s.printf("\t\t_, err := components.NewSubscription(ctx, %q, &components.SubscriptionArgs{Project: pulumi.String(cfg.Require(\"project\")), ProjectNumber: pulumi.String(cfg.Require(\"projectNumber\")), Topic: pulumi.String(\"projects/acme-data-prod/topics/shared\"), Subscription: spec.Subscription{Delivery: \"pull\", Subscribers: []string{\"serviceAccount:loader@acme-data-prod.iam.gserviceaccount.com\"}%s}})\n", cl.name, dl)
			case "raw":
				s.printf("\t\t_, err := pubsub.NewSubscription(ctx, %q, &pubsub.SubscriptionArgs{Project: pulumi.String(cfg.Require(\"project\")), Topic: pulumi.String(\"projects/acme-data-prod/topics/shared\")})\n", cl.name)
			}
			s.printf("\t\tif err != nil {\n\t\t\treturn err\n\t\t}\n\t}\n")
		}
		s.printf("\treturn nil\n}\n")
		files[file] = s.b.String()
	}
	return files, calls
}

// teamProject is the generated team's Pulumi project and dev stack.
var teamProject = map[string]string{
	"Pulumi.yaml": "name: team\nruntime: go\n",
	"Pulumi.dev.yaml": `config:
  team:project: acme-shop-dev
  team:projectNumber: "210987654321"
  team:consumerImage: europe-west1-docker.pkg.dev/acme-shop-dev/eventpipe/consumer:1.4.0
  team:storeUrl:
    secure: v1:c3RvcmUtdXJsLW5vdC1kZWNyeXB0ZWQtb2ZmbGluZQ==
`,
}

// TestFindingsNameTheDeclaringLine: for generated team programs (several declaring calls
// on different lines, some in nested helpers), built as a team builds its module and
// rendered by its own TestPlan with program.Test, every resource in the plan carries the
// position of the call that declared it (its own, or its component's), and every finding
// of `eventpipe check` on the plan names that file and line, in the JSON report, the
// text report, GitHub annotations and SARIF alike. A program whose component refuses its
// arguments fails its TestPlan naming the line of the refused call.
func TestFindingsNameTheDeclaringLine(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a team's module (about 20 CPU-seconds); make test runs it")
	}
	rng := rand.New(rand.NewPCG(37, 1))
	const programs = 8
	files, calls := teamPrograms(rng, programs)
	shapes := map[string]bool{}
	for _, c := range calls {
		shapes[fmt.Sprintf("%s nested %v", c.kind, c.depth > 0)] = true
		shapes[c.finding] = true
	}
	if len(shapes) != 3*2+3 {
		t.Fatalf("the generated programs miss a shape: %v", shapes)
	}
	for name, data := range teamProject {
		files[name] = data
	}
	var tests strings.Builder
	tests.WriteString("package team\n\nimport (\n\t\"os\"\n\t\"path/filepath\"\n\t\"testing\"\n\n\t\"github.com/pulumi/pulumi/sdk/v3/go/pulumi\"\n\n\t\"github.com/eventpipe/eventpipe/components\"\n\t\"github.com/eventpipe/eventpipe/render/program\"\n\t\"github.com/eventpipe/eventpipe/spec\"\n)\n\n")
	for p := range programs {
		fmt.Fprintf(&tests, "func TestPlan%d(t *testing.T) {\n\tt.Setenv(program.PlanEnv, filepath.Join(os.Getenv(\"PLANS\"), \"plan%d.json\"))\n\tprogram.Test(t, \"Pulumi.dev.yaml\", Program%d)\n}\n\n", p, p, p)
	}
	// The refused call: an image without tag or digest.
	tests.WriteString("func TestRefused(t *testing.T) {\n\tif os.Getenv(\"REFUSED\") == \"\" {\n\t\tt.Skip()\n\t}\n\tprogram.Test(t, \"Pulumi.dev.yaml\", refused)\n}\n\n")
	tests.WriteString("func refused(ctx *pulumi.Context) error {\n\t// An untagged image.\n")
	refusedLine := strings.Count(tests.String(), "\n") + 1
	tests.WriteString("\t_, err := components.NewPipeline(ctx, \"untagged\", &components.PipelineArgs{Project: pulumi.String(\"acme-shop-dev\"), ProjectNumber: pulumi.String(\"210987654321\"),\n\t\tConsumer: spec.Consumer{Image: pulumi.String(\"europe-west1-docker.pkg.dev/acme-shop-dev/eventpipe/consumer\")},\n\t\tSubscriptions: map[string]spec.Subscription{\"main\": {Delivery: \"push\"}}})\n\treturn err\n}\n")
	// The same image as another resource's output: refused when it is known, in an apply.
	tests.WriteString("\nfunc TestRefusedAtDeploy(t *testing.T) {\n\tif os.Getenv(\"REFUSED\") == \"\" {\n\t\tt.Skip()\n\t}\n\tprogram.Test(t, \"Pulumi.dev.yaml\", refusedAtDeploy)\n}\n\n")
	tests.WriteString("func refusedAtDeploy(ctx *pulumi.Context) error {\n\timage := pulumi.String(\"europe-west1-docker.pkg.dev/acme-shop-dev/eventpipe/consumer\").ToStringOutput()\n")
	deployLine := strings.Count(tests.String(), "\n") + 1
	tests.WriteString("\t_, err := components.NewPipeline(ctx, \"later\", &components.PipelineArgs{Project: pulumi.String(\"acme-shop-dev\"), ProjectNumber: pulumi.String(\"210987654321\"),\n\t\tConsumer: spec.Consumer{Image: image},\n\t\tSubscriptions: map[string]spec.Subscription{\"main\": {Delivery: \"push\"}}})\n\treturn err\n}\n")
	files["plan_test.go"] = tests.String()

	mod := teamprog.New(t, files)
	plans := filepath.Join(mod.Dir, "plans") // in the project, as the guide writes plan.json
	if err := os.MkdirAll(plans, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := mod.GoTest(t, []string{"PLANS=" + plans}, "-count=1", "-run", "TestPlan", "."); err != nil {
		t.Fatalf("the team's TestPlan: %v\n%s\n%s", err, out, dump(files))
	}
	out, err := mod.GoTest(t, []string{"REFUSED=1"}, "-count=1", "-run", "TestRefused", ".")
	for _, line := range []int{refusedLine, deployLine} {
		if want := fmt.Sprintf("plan_test.go:%d: render dev: ", line); err == nil || !strings.Contains(out, want) || strings.Count(out, "add a tag or digest") < 2 {
			t.Errorf("TestRefused*: %v, want failures naming %q and the fix:\n%s", err, want, out)
		}
	}

	t.Chdir(mod.Dir) // a team checks from its repository's root
	byName := map[string]call{}
	for _, c := range calls {
		byName[c.name] = c
	}
	for p := range programs {
		planFile := filepath.Join("plans", fmt.Sprintf("plan%d.json", p))
		want := declaredPositions(t, planFile, byName)
		checkReports(t, planFile, want, byName)
	}
}

// declaredPositions checks every resource of the plan names the line of its top-level
// resource's call, and returns each resource URN's expected file and line.
func declaredPositions(t *testing.T, planFile string, calls map[string]call) map[string]call {
	t.Helper()
	data, err := os.ReadFile(planFile)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Steps []struct {
			URN      string `json:"urn"`
			NewState struct {
				Type, Parent, SourcePosition string
			} `json:"newState"`
		} `json:"steps"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	parent := map[string]string{}
	for _, s := range doc.Steps {
		parent[s.URN] = s.NewState.Parent
	}
	want := map[string]call{}
	for _, s := range doc.Steps {
		if strings.HasPrefix(s.NewState.Type, "pulumi:") {
			continue // the stack and the default provider: declared by no call
		}
		top := s.URN
		for parent[top] != "" && !strings.HasSuffix(parent[top], "pulumi:pulumi:Stack::team-dev") {
			top = parent[top]
		}
		c, ok := calls[top[strings.LastIndex(top, "::")+2:]]
		if !ok {
			t.Fatalf("%s: %s belongs to no generated call", planFile, s.URN)
		}
		if got, wantPos := s.NewState.SourcePosition, srcpos.Format(c.file, c.line); got != wantPos {
			t.Errorf("%s: %s sourcePosition %q, want %q (the %s call of %s)", planFile, s.URN, got, wantPos, c.kind, c.name)
		}
		want[s.URN] = c
	}
	return want
}

// checkReports runs eventpipe check on the plan with every output and holds each finding
// to its resource's call: JSON findings by URN, and the text, GitHub and SARIF reports to
// the same locations.
func checkReports(t *testing.T, planFile string, want map[string]call, calls map[string]call) {
	t.Helper()
	dir := t.TempDir()
	opts := check.Options{Env: "dev", Outputs: []string{"json=" + filepath.Join(dir, "r.json"), "github=" + filepath.Join(dir, "r.github"),
		"sarif=" + filepath.Join(dir, "r.sarif"), "text=" + filepath.Join(dir, "r.txt")}}
	var stdout, stderr bytes.Buffer
	err := check.Check(context.Background(), &stdout, &stderr, opts, check.Input{File: planFile})
	var report struct {
		Findings []struct {
			RuleID, URN, Type string
			Location          *struct {
				File string
				Line int
			}
		}
	}
	read := func(name string) string {
		data, rerr := os.ReadFile(filepath.Join(dir, name))
		if rerr != nil {
			t.Fatalf("check %s: %v (%v)\n%s", planFile, rerr, err, stderr.String())
		}
		return string(data)
	}
	if jerr := json.Unmarshal([]byte(read("r.json")), &report); jerr != nil {
		t.Fatal(jerr)
	}
	var locs []string // file:line of every finding, from the JSON report
	found := map[string]bool{}
	for _, f := range report.Findings {
		if f.URN == "" {
			continue // a finding on the stack as a whole
		}
		c, ok := want[f.URN]
		if !ok {
			t.Errorf("%s: finding %s on %s, which no generated call declared", planFile, f.RuleID, f.URN)
			continue
		}
		found[c.name+" "+f.RuleID] = true
		if f.Location == nil || f.Location.File != c.file || f.Location.Line != c.line {
			t.Errorf("%s: %s on %s located at %+v, want %s:%d (the %s call of %s)", planFile, f.RuleID, f.URN, f.Location, c.file, c.line, c.kind, c.name)
			continue
		}
		locs = append(locs, fmt.Sprintf("%s:%d", c.file, c.line))
	}
	for _, c := range calls {
		if c.finding != "" && want[anyURN(want, c.name)].name == c.name && !found[c.name+" "+c.finding] {
			t.Errorf("%s: no %s finding on the %s call of %s (%s:%d)", planFile, c.finding, c.kind, c.name, c.file, c.line)
		}
	}
	slices.Sort(locs)

	// GitHub annotations: file=F,line=N on each.
	var gh []string
	for _, l := range strings.Split(read("r.github"), "\n") {
		if !strings.HasPrefix(l, "::error") && !strings.HasPrefix(l, "::warning") && !strings.HasPrefix(l, "::notice") || strings.Contains(l, "Incomplete") {
			continue
		}
		var file string
		var line int
		for _, prop := range strings.Split(strings.SplitN(strings.SplitN(l, " ", 2)[1], "::", 2)[0], ",") {
			k, v, _ := strings.Cut(prop, "=")
			switch k {
			case "file":
				file = v
			case "line":
				fmt.Sscan(v, &line)
			}
		}
		if file != "" {
			gh = append(gh, fmt.Sprintf("%s:%d", file, line))
		}
	}
	slices.Sort(gh)
	if !slices.Equal(gh, locs) {
		t.Errorf("%s: GitHub annotations at %v, want %v", planFile, gh, locs)
	}

	// SARIF: each result's physical location.
	var sarif struct {
		Runs []struct {
			Results []struct {
				Locations []struct {
					PhysicalLocation struct {
						ArtifactLocation struct{ URI string }
						Region           struct{ StartLine int }
					}
				}
			}
		}
	}
	if err := json.Unmarshal([]byte(read("r.sarif")), &sarif); err != nil {
		t.Fatal(err)
	}
	var sl []string
	for _, r := range sarif.Runs[0].Results {
		for _, l := range r.Locations {
			sl = append(sl, fmt.Sprintf("%s:%d", l.PhysicalLocation.ArtifactLocation.URI, l.PhysicalLocation.Region.StartLine))
		}
	}
	slices.Sort(sl)
	if !slices.Equal(sl, locs) {
		t.Errorf("%s: SARIF locations %v, want %v", planFile, sl, locs)
	}

	// Text: each resource heading ends in its location.
	text := read("r.txt")
	for _, f := range report.Findings {
		if c, ok := want[f.URN]; ok {
			if heading := fmt.Sprintf("%s (%s)  %s:%d\n", f.URN, f.Type, c.file, c.line); !strings.Contains(text, heading) {
				t.Errorf("%s: the text report has no heading %q:\n%s", planFile, heading, text)
			}
		}
	}
}

// anyURN is a URN of want declared by the call named name ("" when none is in this plan).
func anyURN(want map[string]call, name string) string {
	for urn, c := range want {
		if c.name == name {
			return urn
		}
	}
	return ""
}

// dump is the generated files, for a failure's message.
func dump(files map[string]string) string {
	var b strings.Builder
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for k := range files {
			if !yield(k) {
				return
			}
		}
	}) {
		fmt.Fprintf(&b, "--- %s\n%s\n", name, files[name])
	}
	return b.String()
}
