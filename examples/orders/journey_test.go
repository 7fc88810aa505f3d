package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/eventpipe/eventpipe/internal/testing/teamprog"
	"github.com/eventpipe/eventpipe/policies/check"
)

// auditSubscription is the mistake of the journey: the audit team's subscription on the
// order events, declared with the GCP SDK directly, so without a dead-letter policy.
const auditSubscription = `	// The audit team reads every order event.
	if _, err := pubsub.NewSubscription(ctx, "orders-audit", &pubsub.SubscriptionArgs{
		Project: project,
		Topic:   topic.ID,
	}); err != nil {
		return err
	}
`

// TestJourneyMissingDeadLetterNamesTheGoLine is docs/deploy.md's "From your own Pulumi
// program" as a team lives it: it copies this folder into its own module, adds a
// subscription without a dead-letter policy to orders/orders.go, runs its TestPlan as
// the guide says (EVENTPIPE_PLAN=$PWD/plan.json go test -run TestPlan .) and checks
// plan.json: the deny names orders/orders.go and the line of the team's call, in the
// text report, the GitHub annotation and SARIF.
func TestJourneyMissingDeadLetterNamesTheGoLine(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a team's module (about 20 CPU-seconds); make test runs it")
	}
	files := map[string]string{}
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasSuffix(path, "journey_test.go") || path == "plan.json" {
			return err
		}
		data, err := os.ReadFile(path)
		files[filepath.ToSlash(path)] = strings.ReplaceAll(string(data), "github.com/eventpipe/eventpipe/examples/orders/", teamprog.Path+"/")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	program := files["orders/orders.go"]
	at := strings.Index(program, "\tctx.Export(")
	if at < 0 || !strings.Contains(program, "\t\"github.com/pulumi/pulumi-gcp/sdk/v8/go/gcp/monitoring\"\n") {
		t.Fatal("orders/orders.go changed: put the audit subscription before its exports again")
	}
	program = program[:at] + auditSubscription + program[at:]
	program = strings.Replace(program, "\t\"github.com/pulumi/pulumi-gcp/sdk/v8/go/gcp/monitoring\"\n",
		"\t\"github.com/pulumi/pulumi-gcp/sdk/v8/go/gcp/monitoring\"\n\t\"github.com/pulumi/pulumi-gcp/sdk/v8/go/gcp/pubsub\"\n", 1)
	files["orders/orders.go"] = program
	line := strings.Count(program[:strings.Index(program, "pubsub.NewSubscription(")], "\n") + 1

	mod := teamprog.New(t, files)
	planFile := filepath.Join(mod.Dir, "plan.json")
	if out, err := mod.GoTest(t, []string{"EVENTPIPE_PLAN=" + planFile}, "-count=1", "-run", "TestPlan", "."); err != nil {
		t.Fatalf("the team's TestPlan: %v\n%s", err, out)
	}

	t.Chdir(mod.Dir) // a team checks from its repository's root
	dir := t.TempDir()
	var stdout, stderr bytes.Buffer
	opts := check.Options{Env: "dev", Outputs: []string{"text", "github=" + filepath.Join(dir, "github"), "sarif=" + filepath.Join(dir, "sarif")}}
	err = check.Check(context.Background(), &stdout, &stderr, opts, check.Input{File: "plan.json"})
	var failed *check.FailedError
	if !errors.As(err, &failed) || failed.Denies == 0 {
		t.Fatalf("eventpipe check plan.json: %v, want a deny\n%s%s", err, stdout.String(), stderr.String())
	}
	const urn = "urn:pulumi:dev::orders::gcp:pubsub/subscription:Subscription::orders-audit"
	want := fmt.Sprintf("orders/orders.go:%d", line)
	if heading := urn + " (gcp:pubsub/subscription:Subscription)  " + want + "\n"; !strings.Contains(stdout.String(), heading) ||
		!strings.Contains(stdout.String(), "EP001") {
		t.Errorf("the text report does not name %s for the missing dead-letter policy:\n%s", want, stdout.String())
	}
	gh, err := os.ReadFile(filepath.Join(dir, "github"))
	if err != nil {
		t.Fatal(err)
	}
	if ann := fmt.Sprintf("::error file=orders/orders.go,line=%d,title=EP001 ", line); !strings.Contains(string(gh), ann) {
		t.Errorf("no GitHub annotation %q:\n%s", ann, gh)
	}
	sarif, err := os.ReadFile(filepath.Join(dir, "sarif"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(sarif), `"uri": "orders/orders.go"`) || !strings.Contains(string(sarif), fmt.Sprintf(`"startLine": %d`, line)) {
		t.Errorf("SARIF does not locate the deny at %s:\n%s", want, sarif)
	}
	// Nothing else the program declares is denied: the example itself passes.
	if failed.Denies != strings.Count(string(gh), "::error file=orders/orders.go,line="+fmt.Sprint(line)+",") {
		t.Errorf("denies elsewhere than the audit subscription:\n%s", gh)
	}
}
