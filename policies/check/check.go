package check

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/eventpipe/eventpipe/internal/srcpos"
	"github.com/eventpipe/eventpipe/policies/evaluate"
	"github.com/eventpipe/eventpipe/policies/plan"
	"github.com/eventpipe/eventpipe/render"
)

// produceOne tells the reader of an unusable document how to make one the rules read.
const produceOne = "produce one with `pulumi preview --json --show-sames`, `pulumi stack export` or `terraform show -json PLANFILE`"

// Input is what `eventpipe check` judges: a plan file, or a stack rendered offline.
type Input struct {
	// File is a plan file (a pulumi preview or export, a terraform plan); "-" reads Stdin.
	// Empty renders Stack.Stack instead.
	File  string
	Stdin io.Reader
	// Stack is the stack to render offline when File is empty.
	Stack render.Options
}

// Check runs the rules on in and writes the report to stdout (and the files of
// opts.Outputs), or answers opts.ListRules and opts.PrintData. Without opts.Env the
// stack's thresholds apply. A failing report is a *FailedError.
func Check(ctx context.Context, stdout, stderr io.Writer, opts Options, in Input) error {
	if opts.Env == "" {
		opts.Env = in.Stack.Stack
	}
	run, err := Start(ctx, "check", opts)
	if err != nil {
		return err
	}
	// The rules compile while the plan is read and parsed.
	var (
		p       *plan.Plan
		source  string
		planErr error
	)
	if !opts.InfoOnly() {
		if in.File != "" {
			source = in.File
			p, planErr = ReadPlan(in.Stdin, in.File)
		} else {
			source = "stack " + in.Stack.Stack
			p, planErr = RenderPlan(ctx, in.Stack)
		}
	}
	if done, err := run.Info(stdout); done || err != nil {
		return err
	}
	if planErr != nil {
		return planErr
	}
	res, err := run.Check(ctx, p)
	if errors.Is(err, evaluate.ErrUnusableDocument) {
		return fmt.Errorf("%w; %s", err, produceOne)
	}
	if err != nil {
		return err
	}
	rep := run.Report(source, res.Format, res.Resources, res.Findings)
	rep.Incomplete = res.Incomplete
	return run.Finish(ctx, stdout, stderr, rep, slog.String("source", source), slog.String("format", res.Format),
		slog.Bool("complete", res.Complete), slog.Int("resources", res.Resources))
}

// ReadPlan reads and decodes a plan file (or stdin for "-"); each resource is located at
// the line of the file that names it.
func ReadPlan(stdin io.Reader, name string) (*plan.Plan, error) {
	file := name
	var data []byte
	var err error
	if name == "-" {
		file = "stdin"
		data, err = io.ReadAll(stdin)
	} else {
		data, err = os.ReadFile(name)
	}
	if err != nil {
		return nil, fmt.Errorf("reading plan: %w", err)
	}
	p, err := plan.Parse(data, file)
	if err != nil {
		var other *plan.OtherOutputError
		if errors.Is(err, plan.ErrUnrecognised) && !errors.As(err, &other) {
			return nil, fmt.Errorf("%w; %s", err, produceOne)
		}
		return nil, err
	}
	locateDeclared(p, name)
	return p, nil
}

// locateDeclared points each resource whose program call the document records
// (plan.Declared) at that file and line instead of the document's line. The positions
// are relative to the program's project root: the folder of the nearest Pulumi.yaml at
// or above the plan file's folder (where `pulumi preview --json` and render/program's
// test write the plan), else at or above the working directory (a plan kept elsewhere,
// or read from standard input, checked from the project), else the plan's folder.
func locateDeclared(p *plan.Plan, name string) {
	if len(p.Declared) == 0 {
		return
	}
	dir := "."
	if name != "-" {
		dir = filepath.Dir(name)
	}
	root, err := srcpos.ProjectRoot(dir)
	if err != nil {
		if root, err = srcpos.ProjectRoot("."); err != nil {
			root = dir
		}
	}
	for urn, pos := range p.Declared {
		if file, line, ok := srcpos.Resolve(root, pos); ok {
			p.Locations[urn] = plan.Location{File: srcpos.Relative(file), Line: line}
		}
	}
}

// RenderPlan renders the stack offline and points each resource at the line of the stack
// config file that declared it.
func RenderPlan(ctx context.Context, stack render.Options) (*plan.Plan, error) {
	res, err := render.Render(ctx, stack)
	if err != nil {
		return nil, fmt.Errorf("rendering stack %s: %w", stack.Stack, err)
	}
	p, err := plan.Parse(res.JSON, "stack "+stack.Stack)
	if err != nil {
		return nil, fmt.Errorf("reading the rendered plan of %s: %w", stack.Stack, err)
	}
	p.Locations = make(map[string]plan.Location, len(res.Sources))
	for urn := range res.Sources {
		file, line := Locate(res, urn)
		p.Locations[urn] = plan.Location{File: file, Line: line}
	}
	return p, nil
}

// Locate is the stack config file (relative to the working directory, as every location
// of a report is) and line that declared urn in res; "" when none did.
func Locate(res *render.Result, urn string) (file string, line int) {
	loc, ok := res.Sources[urn]
	if !ok {
		return "", 0
	}
	return srcpos.Relative(loc.File), loc.Line
}
