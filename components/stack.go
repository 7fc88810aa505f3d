package components

import (
	"fmt"
	"slices"
	"strings"

	"github.com/eventpipe/eventpipe/alerts"
	"github.com/eventpipe/eventpipe/spec"
	"github.com/pulumi/pulumi-gcp/sdk/v8/go/gcp/projects"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// Stack is a stack config (stacks/Pulumi.<stack>.yaml) turned into the
// arguments of its pipelines: the adapter between the repository's YAML
// and the components.
type Stack struct {
	// Spec is the validated stack config, every default filled.
	Spec *spec.Stack
	// Pipelines are the arguments of each pipeline, by name.
	Pipelines map[string]*PipelineArgs
}

// LoadStack reads the config of stack from src, validates it and turns each
// pipeline into PipelineArgs. The alert thresholds are read with the alerts
// package's own types and rules; every problem of the whole config is
// reported at once as spec.Errors, on its config path.
func LoadStack(stack string, src spec.Source) (*Stack, error) {
	st, errs := spec.Read(stack, src)
	thresholds := alerts.Defaults()
	if st != nil && st.Alerts.Thresholds != nil {
		path := spec.Namespace + ":" + spec.KeyAlerts + ".thresholds"
		decodeErrs := spec.Decode(path, st.Alerts.Thresholds, &thresholds)
		errs = append(errs, decodeErrs...)
		if len(decodeErrs) == 0 {
			errs = append(errs, thresholdErrors(path+".", thresholds.Validate())...)
		}
	}
	if st != nil {
		traced := st.Defaults.TraceCollector != nil && *st.Defaults.TraceCollector
		for _, p := range st.SortedPipelines() {
			if p != nil {
				errs = append(errs, deployProblems(st, p, sidecars(p, traced))...)
			}
		}
	}
	if len(errs) > 0 {
		slices.SortStableFunc(errs, func(a, b spec.FieldError) int { return strings.Compare(a.Path, b.Path) })
		return nil, errs
	}
	return &Stack{Spec: st, Pipelines: StackArgs(st, thresholds)}, nil
}

// StackArgs turns every pipeline of the validated stack st into its
// PipelineArgs, with the stack's settings (project, region, environment,
// defaults, alert channels and thresholds) written into each.
func StackArgs(st *spec.Stack, thresholds alerts.Config) map[string]*PipelineArgs {
	out := map[string]*PipelineArgs{}
	for _, p := range st.SortedPipelines() {
		protect := st.Protected(p)
		topic, consumer, alertArgs := p.Topic, p.Consumer, p.Alerts
		if spec.Text(topic.Existing) != "" {
			topic.Name = "" // the existing topic's id, which validation fills in
		}
		if st.StoreSecret && consumer.Store == st.Store {
			// The URL may carry a password: it goes to Secret Manager.
			consumer.Store, consumer.StoreSecret = "", pulumi.ToSecret(pulumi.String(consumer.Store)).(pulumi.StringOutput)
		}
		alertArgs.CriticalChannels = pulumi.ToStringArray(st.Alerts.Channels.Critical)
		alertArgs.WarningChannels = pulumi.ToStringArray(st.Alerts.Channels.Warning)
		alertArgs.Thresholds = &thresholds
		args := &PipelineArgs{
			Project:        pulumi.String(st.Project),
			ProjectNumber:  pulumi.String(st.ProjectNumber),
			Region:         st.Region,
			Environment:    st.Env,
			Labels:         p.Labels,
			Protect:        &protect,
			TraceCollector: st.Defaults.TraceCollector != nil && *st.Defaults.TraceCollector,
			Topic:          &topic,
			Consumer:       consumer,
			Subscriptions:  map[string]spec.Subscription{},
			Alerts:         &alertArgs,
		}
		for _, sub := range p.SortedSubscriptions() {
			args.Subscriptions[sub.Key] = *sub
		}
		out[p.Name] = args
	}
	return out
}

// DeclareStack enables the stack's APIs unless eventpipe:manageApis is
// false (EnableAPIs, RequiredAPIs), declares one Pipeline per pipeline of
// s, in name order, and exports each pipeline's topic and consumer URL. It resolves every
// pipeline first and fails before declaring anything when one is invalid or
// two would declare the same Firestore TTL policy (LoadStack already rejects
// such a stack; arguments changed by hand are checked here).
func DeclareStack(ctx *pulumi.Context, s *Stack) error {
	type resolved struct {
		sc         *scope
		thresholds alerts.Config
	}
	all := map[string]resolved{}
	owners := map[string]string{}
	for _, name := range spec.SortedKeys(s.Pipelines) {
		sc, thresholds, err := resolvePipeline(ctx, name, s.Pipelines[name])
		if err != nil {
			return err
		}
		all[name] = resolved{sc, thresholds}
		project, database, ok := sc.pipeline.Consumer.FirestoreDatabase()
		if !ok {
			continue
		}
		prefix := sc.pipeline.Consumer.CollectionPrefix
		key := project + "/" + database + "/" + prefix
		if prev, dup := owners[key]; dup {
			return fmt.Errorf("pipelines %s and %s both use collection prefix %q in firestore://%s/%s: each would declare the same TTL policies; give one its own consumer.collectionPrefix",
				prev, name, prefix, project, database)
		}
		owners[key] = name
	}
	var apis map[string]*projects.Service
	if ManagesAPIs(s.Spec) {
		var err error
		if apis, err = EnableAPIs(ctx, pulumi.String(s.Spec.Project), RequiredAPIs(s.Spec)); err != nil {
			return err
		}
	}
	for _, name := range spec.SortedKeys(all) {
		r := all[name]
		r.sc.apis = apis
		pl, err := declarePipeline(ctx, name, r.sc, s.Pipelines[name], r.thresholds, nil)
		if err != nil {
			return fmt.Errorf("pipeline %s: %w", name, err)
		}
		ctx.Export(name+".topic", pl.TopicName)
		ctx.Export(name+".consumerUri", pl.ConsumerURI)
	}
	return nil
}
