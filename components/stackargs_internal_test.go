package components

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/eventpipe/eventpipe/spec"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// noMocks answers a program that declares nothing.
type noMocks struct{}

func (noMocks) NewResource(a pulumi.MockResourceArgs) (string, resource.PropertyMap, error) {
	return a.Name, a.Inputs, nil
}

func (noMocks) Call(a pulumi.MockCallArgs) (resource.PropertyMap, error) { return a.Args, nil }

// pipelineArgs are the arguments a Go program passes NewPipeline for
// pipeline p of the validated stack st, with the stack's settings
// (project, region, environment, defaults, alert channels and thresholds)
// written in.
func pipelineArgs(st *Stack, p *spec.Pipeline) *PipelineArgs {
	s := st.Spec
	protect := s.Protected(p)
	topic, consumer, alertArgs := p.Topic, p.Consumer, p.Alerts
	if spec.Text(topic.Existing) != "" {
		topic.Name = "" // the existing topic's id, which validation fills in
	}
	if s.StoreSecret && consumer.Store == s.Store {
		consumer.Store, consumer.StoreSecret = "", pulumi.ToSecret(pulumi.String(consumer.Store)).(pulumi.StringOutput)
	}
	alertArgs.CriticalChannels = pulumi.ToStringArray(s.Alerts.Channels.Critical)
	alertArgs.WarningChannels = pulumi.ToStringArray(s.Alerts.Channels.Warning)
	alertArgs.Thresholds = &st.Thresholds
	args := &PipelineArgs{Project: pulumi.String(s.Project), ProjectNumber: pulumi.String(s.ProjectNumber), Region: s.Region,
		Environment: s.Env, Labels: p.Labels, Protect: &protect, TraceCollector: s.Traced(), Topic: &topic, Consumer: consumer,
		Subscriptions: map[string]spec.Subscription{}, Alerts: &alertArgs}
	for _, sub := range p.SortedSubscriptions() {
		args.Subscriptions[sub.Key] = *sub
	}
	return args
}

// TestPipelineArgsResolveToTheValidatedStack: for every stack file of the
// repository, the arguments a Go program would pass for each pipeline,
// completed and validated by the component (resolvePipeline), are the
// pipeline the stack file validated to, field for field: the arguments
// take the stack's settings as they are, so a program declares what the
// stack file declares, and a validation of them finds nothing to add.
// Only what the stack file sets outside the pipeline differs in form (a
// secret store becomes storeSecret; the alert channels and thresholds are
// arguments).
func TestPipelineArgsResolveToTheValidatedStack(t *testing.T) {
	var files []string
	for _, pattern := range []string{"../stacks/Pulumi.*.yaml", "../stacks/testdata/Pulumi.*.yaml", "../examples/*/Pulumi.*.yaml", "../examples/*/*/Pulumi.*.yaml"} {
		found, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, found...)
	}
	pipelines := 0
	for _, path := range files {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(data), spec.Namespace+":"+spec.KeyPipelines) {
			continue // a Go program's config (examples/orders), not a stack file
		}
		f, err := spec.ParseStackFile(path, data)
		if err != nil {
			t.Fatal(err)
		}
		name := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(path), "Pulumi."), ".yaml")
		st, err := LoadStack(name, f.Source)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		err = pulumi.RunErr(func(ctx *pulumi.Context) error {
			for _, pname := range spec.SortedKeys(st.Spec.Pipelines) {
				pipelines++
				sc, thresholds, err := resolvePipeline(ctx, pname, pipelineArgs(st, st.Spec.Pipelines[pname]))
				if err != nil {
					t.Errorf("%s: pipeline %s: %v", path, pname, err)
					continue
				}
				got, want := *sc.pipeline, *st.Spec.Pipelines[pname]
				got.Description = want.Description // for humans, not an argument
				got.Alerts.CriticalChannels, got.Alerts.WarningChannels, got.Alerts.Thresholds = nil, nil, nil
				if st.Spec.StoreSecret {
					got.Consumer.Store, got.Consumer.StoreSecret = want.Consumer.Store, nil
				}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("%s: pipeline %s resolves to\n%#v\nnot the validated\n%#v", path, pname, got, want)
				}
				if !reflect.DeepEqual(thresholds, st.Thresholds) {
					t.Errorf("%s: pipeline %s resolves to thresholds %+v, not the stack's %+v", path, pname, thresholds, st.Thresholds)
				}
			}
			return nil
		}, pulumi.WithMocks("eventpipe", name, noMocks{}))
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
	}
	if pipelines < 5 {
		t.Fatalf("checked %d pipelines in %v", pipelines, files)
	}
}
