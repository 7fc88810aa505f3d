// Package program renders a team's own Pulumi Go program offline, the way
// `eventpipe render` renders eventpipe's stacks: with Pulumi's mocks and the
// stack's config file, no Pulumi CLI, plugin or credentials. The plan it gives
// is a `pulumi preview --json` document, so `eventpipe check PLAN` judges it
// with the same rules, configuration and exit codes as eventpipe's own stacks.
//
// A team calls it from a test in its program's package:
//
//	func TestPlan(t *testing.T) { program.Test(t, "Pulumi.dev.yaml", run) }
//
// and checks the plan the test writes:
//
//	EVENTPIPE_PLAN=$PWD/plan.json go test -run TestPlan .
//	eventpipe check plan.json --env dev
package program

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"gopkg.in/yaml.v3"

	"github.com/eventpipe/eventpipe/components"
	"github.com/eventpipe/eventpipe/internal/srcpos"
	"github.com/eventpipe/eventpipe/render"
	"github.com/eventpipe/eventpipe/spec"
)

// PlanEnv names the file Test writes the plan to, when set.
const PlanEnv = "EVENTPIPE_PLAN"

// Result is a rendered program.
type Result struct {
	// Project and Stack name the program's Pulumi project and stack.
	Project, Stack string
	// Plan is the plan; JSON the same, indented, ending in a newline.
	Plan *render.Plan
	JSON []byte
}

// Render runs program with mocks and the config of stackFile
// (Pulumi.<stack>.yaml): the stack name comes from the file name, the project
// name from the Pulumi.yaml in the file's folder or above. Secrets in the file
// are never decrypted; the program sees them as secret stand-ins.
func Render(ctx context.Context, stackFile string, run pulumi.RunFunc) (*Result, error) {
	base := filepath.Base(stackFile)
	stack := strings.TrimSuffix(strings.TrimPrefix(base, "Pulumi."), ".yaml")
	if !strings.HasPrefix(base, "Pulumi.") || !strings.HasSuffix(base, ".yaml") || stack == "" {
		return nil, fmt.Errorf("program: %s: name the stack config file Pulumi.<stack>.yaml, as the Pulumi CLI does", stackFile)
	}
	project, root, err := projectName(filepath.Dir(stackFile))
	if err != nil {
		return nil, err
	}
	file, err := spec.ReadStackFile(stackFile)
	if err != nil {
		return nil, err
	}
	plan, err := render.RunProjectProgram(ctx, project, stack, file.Source, nil, run)
	if err != nil {
		return nil, declaredAt(root, err)
	}
	locate(plan, root)
	data, err := plan.JSON()
	if err != nil {
		return nil, fmt.Errorf("program: %w", err)
	}
	return &Result{Project: project, Stack: stack, Plan: plan, JSON: data}, nil
}

// locate sets each resource's SourcePosition: the program's own call that declared it
// (srcpos.Declaring), or for a resource registered where no frame of the program is on
// the stack (inside an apply), that of its parent. Parents come before children in the
// plan.
func locate(plan *render.Plan, root string) {
	at := map[string]string{}
	for i := range plan.Steps {
		st := &plan.Steps[i].NewState
		pos, ok := srcpos.Declaring(root, st.Frames)
		if !ok {
			pos = at[st.Parent]
		}
		st.SourcePosition, at[st.URN] = pos, pos
	}
}

// declaredAt puts the project-relative file and line of the program's call before a
// component's error that carries it (components.CallError).
func declaredAt(root string, err error) error {
	var call *components.CallError
	if !errors.As(err, &call) {
		return err
	}
	pos, ok := srcpos.Declaring(root, []srcpos.Frame{call.At})
	if !ok {
		return err
	}
	file, line, _ := srcpos.Resolve(root, pos)
	return fmt.Errorf("%s:%d: %w", srcpos.Relative(file), line, err)
}

// projectName reads the name of the nearest Pulumi.yaml at or above dir, and the folder
// it is in: the project root.
func projectName(dir string) (name, root string, err error) {
	root, err = srcpos.ProjectRoot(dir)
	if errors.Is(err, srcpos.ErrNoProject) {
		return "", "", fmt.Errorf("program: %w: the stack file must sit in (or below) its project", err)
	}
	if err != nil {
		return "", "", fmt.Errorf("program: %w", err)
	}
	file := filepath.Join(root, "Pulumi.yaml")
	data, err := os.ReadFile(file)
	if err != nil {
		return "", "", fmt.Errorf("program: %w", err)
	}
	var p struct {
		Name string `yaml:"name"`
	}
	if err := yaml.Unmarshal(data, &p); err != nil || p.Name == "" {
		return "", "", fmt.Errorf("program: %s has no project name: %v", file, err)
	}
	return p.Name, root, nil
}

// Test renders program from a go test, failing t when it cannot be rendered
// (the program's own errors, e.g. a component's validation, included), and
// writes the plan to the file $EVENTPIPE_PLAN names, when set, for
// `eventpipe check`.
func Test(t testing.TB, stackFile string, run pulumi.RunFunc) *Result {
	t.Helper()
	res, err := Render(context.Background(), stackFile, run)
	if err != nil {
		t.Fatalf("render %s: %v", stackFile, err)
	}
	if out := os.Getenv(PlanEnv); out != "" {
		if err := os.WriteFile(out, res.JSON, 0o644); err != nil {
			t.Fatalf("write the plan to %s=%s: %v", PlanEnv, out, err)
		}
	}
	return res
}
