package alerts

import (
	"github.com/eventpipe/eventpipe/internal/gcpname"

	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Target names what one pipeline's alerts watch: the consumer service that
// writes the logs and the subscriptions that feed it. Every name is the
// resource's short name (not its full path) as Cloud Monitoring reports it
// in resource labels.
type Target struct {
	Project  string // GCP project ID of the pipeline
	Pipeline string // pipeline name (label eventpipe_pipeline)
	Env      string // environment (label eventpipe_env, log field env)
	Team     string // owning team (label eventpipe_team)
	// Service is the Cloud Run service of the consumer
	// (resource.labels.service_name in its logs).
	Service       string
	Subscriptions []Subscription
	Channels      Channels
	// WorkerPool is true when Service names a Cloud Run worker pool, whose
	// logs come from another monitored resource (cloud_run_worker_pool,
	// resource.labels.worker_pool_name).
	WorkerPool bool
}

// resourceType is the monitored resource the consumer's logs come from.
func (t Target) resourceType() string {
	if t.WorkerPool {
		return "cloud_run_worker_pool"
	}
	return "cloud_run_revision"
}

// logsOf is the Logging filter selecting the consumer's resource.
func (t Target) logsOf() string {
	label := "service_name"
	if t.WorkerPool {
		label = "worker_pool_name"
	}
	return `resource.type=` + quote(t.resourceType()) + ` AND resource.labels.` + label + `=` + quote(t.Service)
}

// Subscription is one subscription feeding the consumer.
type Subscription struct {
	Name string // subscription ID, in the target's project
	// Topic is the full name (projects/P/topics/T) of the topic it reads,
	// where a replay publishes to; it may be in another project.
	Topic string
	// DLQSubscription and DLQTopic name the dead-letter subscription and
	// topic; both are empty when the subscription opted out of a DLQ.
	DLQSubscription string
	DLQTopic        string
	Push            bool // push (true) or pull (false) delivery
}

// HasDLQ reports whether s dead-letters.
func (s Subscription) HasDLQ() bool { return s.DLQSubscription != "" }

// Log-based metric names allow these characters (and '/', used as separator).
var metricPart = regexp.MustCompile(`^[A-Za-z0-9_\-.,+!*'()%]+$`)

// Validate reports every problem with t, naming the field and the fix.
func (t Target) Validate() error {
	var errs []error
	bad := func(field, value, want, fix string) {
		errs = append(errs, &FieldError{In: "alerts target", Path: field, Value: strconv.Quote(value), Allowed: want, Fix: fix})
	}
	if !gcpname.ProjectID(t.Project) {
		bad("project", t.Project, "a GCP project ID (6–30 chars, lowercase letters, digits, hyphens)", "set the stack's gcp:project")
	}
	for _, f := range []struct{ name, value string }{{"pipeline", t.Pipeline}, {"env", t.Env}} {
		if f.value == "" || !metricPart.MatchString(f.value) || strings.Contains(f.value, "/") {
			bad(f.name, f.value, "non-empty, letters, digits and _-.", "rename it; it becomes part of log-based metric names")
		}
	}
	if len(metricName(t, "firestore_errors")) > 100 {
		bad("pipeline", t.Pipeline, "short enough for metric names (≤ 100 chars in total)", "shorten the pipeline or env name")
	}
	if t.Team == "" {
		bad("team", t.Team, "non-empty", "set the owning team; it labels every policy so incidents reach the right people")
	}
	if !gcpname.RunService(t.Service) {
		bad("service", t.Service, "a Cloud Run service name (lowercase letters, digits, hyphens, ≤ 49 chars)", "pass the consumer's service name")
	}
	if len(t.Subscriptions) == 0 {
		bad("subscriptions", "[]", "at least one subscription", "a pipeline without subscriptions has nothing to alert on")
	}
	seen := map[string]bool{}
	for i, s := range t.Subscriptions {
		f := fmt.Sprintf("subscriptions[%d]", i)
		if !gcpname.PubSubID(s.Name) {
			bad(f+".name", s.Name, "a Pub/Sub subscription ID", "pass the subscription's ID, not its full path")
		}
		if seen[s.Name] {
			bad(f+".name", s.Name, "unique within the pipeline", "remove the duplicate")
		}
		seen[s.Name] = true
		if project, id, ok := gcpname.Topic(s.Topic); !ok || !gcpname.ProjectID(project) || !gcpname.PubSubID(id) {
			bad(f+".topic", s.Topic, "a full topic name, projects/PROJECT/topics/TOPIC", "pass the full name of the topic the subscription reads")
		}
		if s.DLQSubscription != "" && !gcpname.PubSubID(s.DLQSubscription) {
			bad(f+".dlqSubscription", s.DLQSubscription, "a Pub/Sub subscription ID", "pass the DLQ subscription's ID")
		}
		if (s.DLQSubscription == "") != (s.DLQTopic == "") {
			bad(f+".dlqTopic", s.DLQTopic, "set exactly when dlqSubscription is set", "pass both DLQ names, or neither for an explicit opt-out")
		} else if s.DLQTopic != "" && !gcpname.PubSubID(s.DLQTopic) {
			bad(f+".dlqTopic", s.DLQTopic, "a Pub/Sub topic ID", "pass the DLQ topic's ID")
		}
	}
	if err := t.Channels.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// labels are the user labels of t's resources: the pipeline's, or with sub not "" those
// of one of its subscriptions.
func (t Target) labels(sub string) map[string]string {
	labels := map[string]string{
		"eventpipe_pipeline": labelValue(t.Pipeline),
		"eventpipe_env":      labelValue(t.Env),
		"eventpipe_team":     labelValue(t.Team),
	}
	if sub != "" {
		labels["eventpipe_subscription"] = labelValue(sub)
	}
	return labels
}

// labelValue normalises s to a GCP label value: lowercase, [a-z0-9_-],
// at most 63 characters.
func labelValue(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '_', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
		if b.Len() == 63 {
			break
		}
	}
	return b.String()
}
