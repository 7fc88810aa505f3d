package check_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/eventpipe/eventpipe/internal/testing/plantest"
	"github.com/eventpipe/eventpipe/policies/check"
	"github.com/eventpipe/eventpipe/policies/plan"
	"github.com/eventpipe/eventpipe/render"
)

// TestCheckStackPasses: the dev stack, rendered offline, passes; the verdict is logged.
func TestCheckStackPasses(t *testing.T) {
	var out, log bytes.Buffer
	err := check.Check(context.Background(), &out, &log, check.Options{Outputs: []string{"text"}}, check.Input{Stack: render.Options{Stack: "dev"}})
	if err != nil {
		t.Fatalf("check --stack dev: %v\n%s", err, out.String())
	}
	if !strings.Contains(log.String(), `"msg":"check finished"`) || !strings.Contains(log.String(), `"passed":true`) {
		t.Errorf("no verdict logged: %s", log.String())
	}
}

// TestCheckVerdicts: each break of the rendered prod stack is found by its rule, located
// in the plan file, and fails the check exactly when it is a deny (or a warning with
// FailOnWarn).
func TestCheckVerdicts(t *testing.T) {
	data, err := render.Stack(context.Background(), render.Options{Stack: "prod"})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range plantest.RenderedProdMutations() {
		t.Run(m.Name, func(t *testing.T) {
			doc := plantest.Parse(t, data)
			m.Apply(t, doc)
			path := filepath.Join(t.TempDir(), "plan.json")
			if err := os.WriteFile(path, doc.JSON(t), 0o600); err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			run, err := check.Start(ctx, "check", check.Options{Env: "prod"})
			if err != nil {
				t.Fatal(err)
			}
			p, err := check.ReadPlan(nil, path)
			if err != nil {
				t.Fatal(err)
			}
			res, err := run.Check(ctx, p)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Findings) != 1 || string(res.Findings[0].Level)+":"+res.Findings[0].Rule.ID != m.Want {
				t.Fatalf("findings %+v, want exactly %s", res.Findings, m.Want)
			}
			if loc := res.Findings[0].Location; loc == nil || loc.File != path || loc.Line < 1 {
				t.Errorf("finding not located in the plan file: %+v", loc)
			}
			deny := strings.HasPrefix(m.Want, "deny:")
			for _, failOnWarn := range []bool{false, true} {
				err := check.Check(ctx, &bytes.Buffer{}, &bytes.Buffer{}, check.Options{Env: "prod", FailOnWarn: failOnWarn}, check.Input{File: path})
				var failed *check.FailedError
				if got, want := errors.As(err, &failed), deny || failOnWarn; got != want || (err != nil && !got) {
					t.Errorf("fail-on-warn %v: %v, want failed=%v", failOnWarn, err, want)
				}
			}
		})
	}
}

// TestReadPlanUnrecognised: a document that is no plan says how to produce one.
func TestReadPlanUnrecognised(t *testing.T) {
	_, err := check.ReadPlan(strings.NewReader("apiVersion: v1\nkind: ConfigMap\n"), "-")
	if !errors.Is(err, plan.ErrUnrecognised) || !strings.Contains(err.Error(), "pulumi preview --json --show-sames") {
		t.Fatalf("ReadPlan: %v", err)
	}
}

// TestInfoListsRules: ListRules answers with the rules instead of a verdict.
func TestInfoListsRules(t *testing.T) {
	run, err := check.Start(context.Background(), "check", check.Options{ListRules: true})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if done, err := run.Info(&out); !done || err != nil {
		t.Fatalf("Info: %v, %v", done, err)
	}
	if !strings.HasPrefix(out.String(), "ID ") || !strings.Contains(out.String(), "EP002") {
		t.Errorf("rules table:\n%s", out.String())
	}
}

// TestFailedErrorCounts: the verdict of a failing check counts in the singular for one.
func TestFailedErrorCounts(t *testing.T) {
	for _, tt := range []struct {
		denies, warnings int
		want             string
	}{
		{1, 0, "check failed: 1 deny, 0 warnings (fail-on-warn false)"},
		{2, 1, "check failed: 2 denies, 1 warning (fail-on-warn false)"},
	} {
		if got := (&check.FailedError{Command: "check", Denies: tt.denies, Warnings: tt.warnings}).Error(); got != tt.want {
			t.Errorf("FailedError = %q, want %q", got, tt.want)
		}
	}
}

// TestIncompleteDocuments: a preview printed without --show-sames is judged only as far as
// it shows. An unchanged stack (no resource shown, for every environment) passes: a change
// that changes nothing introduces no violation, and the output says nothing changed and how
// to judge the whole stack; of a change (one subscription shown) the verdict stands, and
// its text and json outputs say the document is incomplete and what to run.
func TestIncompleteDocuments(t *testing.T) {
	ctx := context.Background()
	data, err := render.Stack(ctx, render.Options{Stack: "prod"})
	if err != nil {
		t.Fatal(err)
	}
	for _, env := range []string{"", "dev", "prod"} {
		for _, keep := range [][]plantest.Ref{nil, {{Type: plantest.SubscriptionType, Name: plantest.PushSubscription}}} {
			doc := plantest.Parse(t, data)
			doc.KeepChanged(t, keep...)
			path := filepath.Join(t.TempDir(), "preview.json")
			if err := os.WriteFile(path, doc.JSON(t), 0o600); err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			err := check.Check(ctx, &out, &bytes.Buffer{}, check.Options{Env: env, Outputs: []string{"text", "json=" + filepath.Join(filepath.Dir(path), "out.json")}}, check.Input{File: path})
			if len(keep) == 0 {
				if err != nil || !strings.Contains(out.String(), "incomplete document: nothing changed: the preview changes no resource") ||
					!strings.Contains(out.String(), "to judge the whole stack check `pulumi preview --json --show-sames`") ||
					!strings.Contains(out.String(), "PASS (on an incomplete document") {
					t.Errorf("env %q, unchanged stack: %v\n%s", env, err, out.String())
				}
				continue
			}
			if err != nil {
				t.Fatalf("env %q, one change: %v", env, err)
			}
			js, err := os.ReadFile(filepath.Join(filepath.Dir(path), "out.json"))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(out.String(), "incomplete document: printed without --show-sames") || !strings.Contains(out.String(), "PASS (on an incomplete document") ||
				!strings.Contains(string(js), `"complete": false`) || !strings.Contains(string(js), "pulumi preview --json --show-sames") ||
				(env == "prod" && !strings.Contains(out.String(), "\nenvironment: prod: the thresholds for every environment; EP012, EP016, EP101, EP103 mandatory (deny)\n")) {
				t.Errorf("env %q, one change: the outputs do not say the document is incomplete:\n%s\n%s", env, out.String(), js)
			}
		}
	}
}
