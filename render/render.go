package render

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/eventpipe/eventpipe/components"
	"github.com/eventpipe/eventpipe/spec"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/common/tokens"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// Project is the Pulumi project name (Pulumi.yaml).
const Project = "eventpipe"

// ProviderVersion is the pulumi-gcp version resources are planned with.
const ProviderVersion = "8.41.1"

// Options select what to render: the stack and its config file (spec.Selection).
type Options = spec.Selection

// Result is a rendered stack.
type Result struct {
	// JSON is the plan, indented, ending in a newline.
	JSON []byte
	// Plan is the decoded plan.
	Plan *Plan
	// Stack is the validated spec the plan was declared from.
	Stack *spec.Stack
	// File is the stack config file that was read.
	File *spec.StackFile
	// Sources maps each resource URN to where its pipeline, subscription,
	// consumer or topic is declared in File (for SARIF and error reports).
	Sources map[string]spec.Location
}

// Stack renders a stack and returns its plan as JSON (`pulumi preview --json` shape).
func Stack(ctx context.Context, opts Options) ([]byte, error) {
	res, err := Render(ctx, opts)
	if err != nil {
		return nil, err
	}
	return res.JSON, nil
}

// Render reads and validates the stack config (components.LoadStack), runs
// components.Program with mocks, and builds the plan. On any validation
// error it returns spec.Errors (with file locations) and no plan.
func Render(ctx context.Context, opts Options) (*Result, error) {
	if opts.Stack == "" {
		return nil, errors.New("render: no stack given; pass a stack name such as dev, staging or prod")
	}
	path, err := opts.Path()
	if err != nil {
		return nil, err
	}
	file, err := spec.ReadStackFile(path)
	if err != nil {
		return nil, err
	}
	loaded, err := components.LoadStack(opts.Stack, file.Source)
	if errs, ok := err.(spec.Errors); ok {
		return nil, file.Place(errs)
	}
	if err != nil {
		return nil, err
	}
	st := loaded.Spec
	program := components.Program(components.ProgramOptions{ConfigKeys: file.Source.Keys()})
	plan, err := RunProgram(ctx, opts.Stack, file.Source, st, program)
	if err != nil {
		return nil, err
	}
	data, err := plan.JSON()
	if err != nil {
		return nil, fmt.Errorf("render %s: %w", opts.Stack, err)
	}
	return &Result{JSON: data, Plan: plan, Stack: st, File: file, Sources: sources(st, file, plan)}, nil
}

// RunProgram runs program for stack with mocks and the config in src, and
// returns its plan. st (may be nil) supplies project numbers for mock URLs.
// Render uses it with components.Program; component tests use it with a
// program that declares one component.
func RunProgram(ctx context.Context, stack string, src spec.MapSource, st *spec.Stack, program pulumi.RunFunc) (*Plan, error) {
	return RunProjectProgram(ctx, Project, stack, src, st, program)
}

// RunProjectProgram is RunProgram for the program of another Pulumi
// project than eventpipe's (a user's program, such as the examples): its
// config is read in the project's namespace.
func RunProjectProgram(ctx context.Context, project, stack string, src spec.MapSource, st *spec.Stack, program pulumi.RunFunc) (*Plan, error) {
	mocks := NewMocks(project, stack, st)
	pctx, err := pulumi.NewContext(ctx, pulumi.RunInfo{
		Project:          project,
		Stack:            stack,
		Config:           src.Values,
		ConfigSecretKeys: spec.SortedKeys(src.Secrets),
		DryRun:           true,
		Mocks:            mocks,
	})
	if err != nil {
		return nil, fmt.Errorf("render %s: start program: %w", stack, err)
	}
	defer pctx.Close()
	if err := pulumi.RunWithContext(pctx, program); err != nil {
		return nil, fmt.Errorf("render %s: %w", stack, err)
	}
	return buildPlan(project, stack, src, mocks.Resources()), nil
}

// buildPlan turns registrations into preview steps: the root stack, the
// default gcp provider, then every resource with parents and dependencies
// before dependents (ties by URN), so output order is stable.
func buildPlan(project, stack string, src spec.MapSource, regs []Registered) *Plan {
	stackURN := string(resource.NewURN(tokens.QName(stack), tokens.PackageName(project), "", resource.RootStackType, project+"-"+stack))
	providerURN := string(resource.NewURN(tokens.QName(stack), tokens.PackageName(project), "", "pulumi:providers:gcp", "default_"+strings.ReplaceAll(ProviderVersion, ".", "_")))
	provider := providerURN + "::" + Unknown
	plan := &Plan{Config: map[string]string{}, Diagnostics: []any{}, ChangeSummary: map[string]int{}}
	for k, v := range src.Values {
		if src.Secrets[k] {
			v = Secret
		}
		plan.Config[k] = v
	}
	plan.Steps = append(plan.Steps,
		Step{Op: "create", URN: stackURN, NewState: State{URN: stackURN, Type: string(resource.RootStackType), Inputs: map[string]any{},
			Dependencies: []string{}, PropertyDependencies: map[string][]string{}}},
		Step{Op: "create", URN: providerURN, NewState: State{URN: providerURN, Type: "pulumi:providers:gcp", Custom: true,
			Inputs: map[string]any{"version": ProviderVersion}, Dependencies: []string{}, PropertyDependencies: map[string][]string{}}},
	)
	for _, r := range topoSort(regs) {
		st := State{URN: r.URN, Type: r.Type, Custom: r.Custom, Inputs: propertyMap(r.Inputs), Parent: r.Parent,
			Protect: r.Protect, Dependencies: r.Dependencies, PropertyDependencies: r.PropertyDependencies, Frames: r.Frames}
		if st.Dependencies == nil {
			st.Dependencies = []string{}
		}
		if st.PropertyDependencies == nil {
			st.PropertyDependencies = map[string][]string{}
		}
		step := Step{Op: "create", URN: r.URN, NewState: st}
		if r.Custom {
			step.Provider = provider
		}
		plan.Steps = append(plan.Steps, step)
	}
	for _, s := range plan.Steps {
		plan.ChangeSummary[s.Op]++
	}
	return plan
}

// topoSort orders registrations so a resource follows its parent and its
// dependencies; among ready resources the smallest URN goes first.
func topoSort(regs []Registered) []Registered {
	byURN := map[string]Registered{}
	for _, r := range regs {
		byURN[r.URN] = r
	}
	done := map[string]bool{}
	var out []Registered
	var visit func(urn string, onPath map[string]bool)
	visit = func(urn string, onPath map[string]bool) {
		r, ok := byURN[urn]
		if !ok || done[urn] || onPath[urn] {
			return
		}
		onPath[urn] = true
		prereqs := append([]string{r.Parent}, r.Dependencies...)
		for _, urns := range r.PropertyDependencies {
			prereqs = append(prereqs, urns...)
		}
		slices.Sort(prereqs)
		for _, p := range prereqs {
			visit(p, onPath)
		}
		delete(onPath, urn)
		done[urn] = true
		out = append(out, r)
	}
	urns := spec.SortedKeys(byURN)
	for _, u := range urns {
		visit(u, map[string]bool{})
	}
	return out
}

// propertyMap converts resource inputs to plain JSON values.
func propertyMap(m resource.PropertyMap) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		if strings.HasPrefix(string(k), "__") {
			continue // engine bookkeeping such as __defaults
		}
		out[string(k)] = propertyValue(v)
	}
	return out
}

func propertyValue(v resource.PropertyValue) any {
	switch {
	case v.IsSecret():
		return Secret
	case v.IsComputed():
		return Unknown
	case v.IsOutput():
		o := v.OutputValue()
		if o.Secret {
			return Secret
		}
		if !o.Known {
			return Unknown
		}
		return propertyValue(o.Element)
	case v.IsNull():
		return nil
	case v.IsBool():
		return v.BoolValue()
	case v.IsNumber():
		return v.NumberValue()
	case v.IsString():
		return v.StringValue()
	case v.IsArray():
		arr := v.ArrayValue()
		out := make([]any, len(arr))
		for i, e := range arr {
			out[i] = propertyValue(e)
		}
		return out
	case v.IsObject():
		return propertyMap(v.ObjectValue())
	case v.IsResourceReference():
		return string(v.ResourceReferenceValue().URN)
	case v.IsAsset(), v.IsArchive():
		return "[asset]"
	}
	return nil
}
