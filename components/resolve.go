package components

import (
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"github.com/eventpipe/eventpipe/internal/srcpos"
	"github.com/eventpipe/eventpipe/spec"
	"github.com/pulumi/pulumi-gcp/sdk/v8/go/gcp/projects"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// An input is known when the program runs (pulumi.String, also what a
// component provider hands over for a literal) or only at deploy time
// (another resource's output). Validation and the names derived from an
// input need its value: a known value is used as it is; an unknown one is
// validated as a placeholder of the right shape, and every string derived
// from it is completed at deploy time (deferrals.str). The placeholders
// share no substring, so completing one never touches another.
const (
	placeholderProject = "eventpipe-deferred-project"
	placeholderTopic   = "projects/eventpipe-deferred-t/topics/eventpipe-deferred-topic"
	placeholderImage   = "eventpipe.deferred/consumer:eventpipe-deferred-image"
	placeholderKMSKey  = "projects/eventpipe-deferred-k/locations/l/keyRings/r/cryptoKeys/eventpipe-deferred-key"
	placeholderAccount = "eventpipe-deferred-account@eventpipe-deferred-a.iam.gserviceaccount.com"
)

// deferrals records the inputs stood in for by placeholders, and the program's call
// of the component, which the checks made when they are known name.
type deferrals struct {
	list []deferred
	at   srcpos.Frame
}

type deferred struct {
	placeholder string
	input       pulumi.StringInput
}

// known returns in's value when the program knows it.
func known(in pulumi.StringInput) (string, bool) {
	v, ok := in.(pulumi.String)
	return string(v), ok
}

// value returns in's value when known, "" for a nil input, and otherwise
// placeholder, remembering in as its deploy-time value.
func (d *deferrals) value(in pulumi.StringInput, placeholder string) string {
	if in == nil {
		return ""
	}
	if v, ok := known(in); ok {
		return v
	}
	for _, x := range d.list {
		if x.placeholder == placeholder {
			return placeholder
		}
	}
	d.list = append(d.list, deferred{placeholder, in})
	return placeholder
}

// stand is in as validation reads it: its value when known, else
// placeholder (remembering in as its deploy-time value); nil for nil.
func (d *deferrals) stand(in pulumi.StringInput, placeholder string) pulumi.StringInput {
	if in == nil {
		return nil
	}
	return pulumi.String(d.value(in, placeholder))
}

// topic is a copy of t (nil: none) for its scope to complete and validate,
// its inputs unknown to the program standing in as placeholders.
func (d *deferrals) topic(t *spec.Topic) spec.Topic {
	if t == nil {
		return spec.Topic{}
	}
	out := *t
	out.Existing = d.stand(t.Existing, placeholderTopic)
	out.KMSKeyName = d.stand(t.KMSKeyName, placeholderKMSKey)
	return out
}

// consumer is a copy of k for its scope to complete and validate (the
// caller's settings are left as they are), its inputs unknown to the
// program standing in as placeholders; storeSecret stays the input.
func (d *deferrals) consumer(k *spec.Consumer) spec.Consumer {
	out := *k
	out.Image = d.stand(k.Image, placeholderImage)
	out.ServiceAccount = d.stand(k.ServiceAccount, placeholderAccount)
	if k.VPCAccess != nil {
		v := *k.VPCAccess
		out.VPCAccess = &v
	}
	if k.Handler != nil {
		h := *k.Handler
		out.Handler = &h
	}
	return out
}

// subscription is a copy of s keyed key, for its scope to complete and
// validate (the caller's settings are left as they are).
func subscription(s spec.Subscription, key string) *spec.Subscription {
	s.Key = key
	if s.DeadLetter != nil {
		dl := *s.DeadLetter
		s.DeadLetter = &dl
	}
	return &s
}

// str is s as an input, its placeholders completed at deploy time.
func (d *deferrals) str(s string) pulumi.StringInput {
	var used []deferred
	for _, x := range d.list {
		if s == x.placeholder {
			return x.input
		}
		if strings.Contains(s, x.placeholder) {
			used = append(used, x)
		}
	}
	if len(used) == 0 {
		return pulumi.String(s)
	}
	values := make([]any, len(used))
	for i, x := range used {
		values[i] = x.input
	}
	return pulumi.All(values...).ApplyT(func(vs []any) string {
		out := s
		for i, x := range used {
			out = strings.ReplaceAll(out, x.placeholder, vs[i].(string))
		}
		return out
	}).(pulumi.StringOutput)
}

// strs is list as an input, its placeholders completed at deploy time.
func (d *deferrals) strs(list []string) pulumi.StringArray {
	out := make(pulumi.StringArray, len(list))
	for i, s := range list {
		out[i] = d.str(s)
	}
	return out
}

// image is the image input of the validated image (a value or the
// placeholder), checked at deploy time when it is another resource's
// output: an untagged image would otherwise silently deploy :latest.
func (d *deferrals) image(image string) pulumi.StringInput {
	if image != placeholderImage {
		return pulumi.String(image)
	}
	return d.str(image).ToStringOutput().ApplyT(func(v string) (string, error) {
		if e := spec.CheckImage(v); e != nil {
			e.Path, e.Value = "consumer.image", v
			return "", d.declared(e)
		}
		return v, nil
	}).(pulumi.StringOutput)
}

// scope is what the parts of one pipeline share, resolved: the validated
// settings (stack config values, defaults filled) and the inputs they were
// read from.
type scope struct {
	stack    *spec.Stack
	pipeline *spec.Pipeline
	d        *deferrals
	// project and projectNumber are the inputs (never nil).
	project, projectNumber pulumi.StringInput
	// inPipeline labels resources with their pipeline (eventpipe_pipeline);
	// a component on its own belongs to none.
	inPipeline bool
	// ready, when set, is a Project's apis output every resource and call waits for.
	ready pulumi.StringArrayInput
	// agentIdentity is the Pub/Sub service agent the grants to sc.agent() wait for.
	agentIdentity *projects.ServiceIdentity
}

// newScope starts the scope of a component named name from its common
// arguments; Environment defaults to the stack name.
func newScope(ctx *pulumi.Context, name string, project, projectNumber pulumi.StringInput, region, env string, labels map[string]string, protect *bool) *scope {
	d := &deferrals{at: callerOutside()}
	// The number only names the service agent, which is built from the
	// input itself: an unknown one validates as a stand-in number.
	number, ok := known(projectNumber)
	if !ok && projectNumber != nil {
		number = "1"
	}
	sc := &scope{
		stack: &spec.Stack{
			Name:          ctx.Stack(),
			Project:       d.value(project, placeholderProject),
			ProjectNumber: number,
			Region:        region,
			Env:           env,
			Defaults:      spec.Defaults{Protect: protect},
		},
		pipeline:      &spec.Pipeline{Name: name, Labels: labels},
		d:             d,
		project:       project,
		projectNumber: projectNumber,
	}
	sc.stack.Pipelines = map[string]*spec.Pipeline{name: sc.pipeline}
	if project == nil {
		sc.project = pulumi.String("")
	}
	if projectNumber == nil {
		sc.projectNumber = pulumi.String("")
	}
	return sc
}

// storeSecret makes secret, when set, the consumer's store: validated as a
// stack file's secret store URL is, and never a Firestore store (a secret
// URL is read from Secret Manager at run time, so its kind is not known).
// Setting store too is a problem.
func (sc *scope) storeSecret(secret pulumi.StringInput) spec.Errors {
	if secret == nil {
		return nil
	}
	var problems spec.Errors
	if k := &sc.pipeline.Consumer; k.Store != "" {
		problems = append(problems, spec.FieldError{Path: "consumer.store", Value: strconv.Quote(k.Store), Allowed: "store or storeSecret, not both",
			Fix: "keep storeSecret for a URL with a password, store for one without"})
	}
	sc.stack.Store, sc.stack.StoreSecret = spec.OfflineSecret, true
	if v, ok := known(secret); ok {
		sc.stack.Store = v
	}
	return problems
}

// labels are the labels of the scope's resources with role.
func (sc *scope) labels(role string) pulumi.StringMap {
	m := sc.stack.Labels(sc.pipeline, role)
	if !sc.inPipeline {
		delete(m, spec.LabelPipeline)
	}
	return pulumi.ToStringMap(m)
}

// subscriptionLabels are the labels of sub, a source subscription of the
// scope: its role and the DLQ opt-out, if any, with its reason.
func (sc *scope) subscriptionLabels(sub *spec.Subscription) pulumi.StringMap {
	m := sc.stack.SubscriptionLabels(sc.pipeline, sub)
	if !sc.inPipeline {
		delete(m, spec.LabelPipeline)
	}
	return pulumi.ToStringMap(m)
}

// protect is the option protecting a stateful resource of the scope from
// deletion and replacement (see spec.Defaults.Protect).
func (sc *scope) protect() pulumi.ResourceOption {
	return pulumi.Protect(sc.stack.Protected(sc.pipeline))
}

// agent is the member of the project's Pub/Sub service agent, named from
// the configured project number (declarePubSubAgent checks it).
func (sc *scope) agent() pulumi.StringInput {
	return sc.projectNumber.ToStringOutput().ApplyT(spec.PubSubAgent).(pulumi.StringOutput)
}

// agentWait is the option making a grant to the agent wait for it to exist.
func (sc *scope) agentWait() pulumi.ResourceOption {
	if sc.agentIdentity == nil {
		return pulumi.DependsOn(nil)
	}
	return pulumi.DependsOn([]pulumi.Resource{sc.agentIdentity})
}

// argsError turns the validation errors of a component named name (kind
// says which) into errors on its argument paths, so the user reads the
// field they set: stack config paths lose their eventpipe: and pipeline
// prefixes.
func argsError(kind, name string, err error) error {
	if err == nil {
		return nil
	}
	var errs spec.Errors
	if !errors.As(err, &errs) {
		return fmt.Errorf("%s %s: %w", kind, name, err)
	}
	out := make(spec.Errors, len(errs))
	for i, e := range errs {
		e.Path, e.Pipeline = argsPath(e.Path, name), ""
		out[i] = e
	}
	return fmt.Errorf("%s %s: %w", kind, name, out)
}

// argsPath maps a stack config path of pipeline name to its Args path.
func argsPath(path, name string) string {
	root := spec.Namespace + ":"
	pipeline := root + spec.KeyPipelines + "." + name
	alerts := root + spec.KeyAlerts + "."
	switch {
	case path == pipeline:
		return "name"
	case strings.HasPrefix(path, pipeline+"."):
		return path[len(pipeline)+1:]
	case path == root+spec.KeyEnv:
		return "environment"
	case path == root+spec.KeyStore:
		return "consumer.storeSecret"
	case strings.HasPrefix(path, alerts+"channels.critical"):
		return "alerts.criticalChannels" + strings.TrimPrefix(path, alerts+"channels.critical")
	case strings.HasPrefix(path, alerts+"channels.warning"):
		return "alerts.warningChannels" + strings.TrimPrefix(path, alerts+"channels.warning")
	}
	return strings.TrimPrefix(path, root)
}

// outputs are the values of c's fields tagged `pulumi`, by tag: the outputs
// a component registers are exactly the ones its type declares.
func outputs(c any) pulumi.Map {
	v := reflect.ValueOf(c).Elem()
	out := pulumi.Map{}
	for _, f := range reflect.VisibleFields(v.Type()) {
		tag, ok := f.Tag.Lookup("pulumi")
		if !ok || !f.IsExported() {
			continue
		}
		if in, ok := v.FieldByIndex(f.Index).Interface().(pulumi.Input); ok && in != nil {
			out[strings.Split(tag, ",")[0]] = in
		}
	}
	return out
}
