package gcpstandin

import (
	"reflect"
	"slices"
	"strings"

	"github.com/pulumi/pulumi-gcp/sdk/v8/go/gcp/cloudrunv2"
	"github.com/pulumi/pulumi-gcp/sdk/v8/go/gcp/firestore"
	"github.com/pulumi/pulumi-gcp/sdk/v8/go/gcp/logging"
	"github.com/pulumi/pulumi-gcp/sdk/v8/go/gcp/monitoring"
	"github.com/pulumi/pulumi-gcp/sdk/v8/go/gcp/projects"
	"github.com/pulumi/pulumi-gcp/sdk/v8/go/gcp/pubsub"
	"github.com/pulumi/pulumi-gcp/sdk/v8/go/gcp/secretmanager"
	"github.com/pulumi/pulumi-gcp/sdk/v8/go/gcp/serviceaccount"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// What the provider does after create: every resource is read back as the API reports
// it (terraform-provider-google-beta v6.49.2, the provider pulumi-gcp v8.41.1 bridges:
// each resource's Create ends in its Read, and each field is flattened from the API's
// answer, e.g. flattenCloudRunV2WorkerPoolLaunchStage returns the API's value). So the
// state holds what the API filled in or normalised, and the next preview compares the
// program's inputs with that state (the bridge plans with the prior state), the way
// Terraform's SDKv2 does:
//
//   - a field the inputs set differs when the state holds another value: sending a
//     value the API normalises (a worker pool's launchStage BETA, read back GA) is a
//     diff on every `up` (chainguard-dev/terraform-infra-common#608);
//   - a field the inputs leave out is no diff when it is optional-and-computed (the
//     plan keeps the state's value), or when the state holds its zero value; an
//     optional field that is not computed and whose state is not zero is a diff.
//
// Which top-level fields are optional-and-computed is taken from the pulumi-gcp v8.41.1
// schema as its Go SDK (in the module cache) renders it: a resource's output field for
// an optional input is a plain output (pulumi.StringOutput) when the schema lists it
// among the outputs every state has, i.e. computed, and a pointer output
// (pulumi.StringPtrOutput) otherwise. The Go SDK renders nested types once for inputs
// and outputs, so the nested optional-and-computed fields the stand-in relies on are
// listed from the provider's schema (resource_cloud_run_v2_service.go and
// resource_cloud_run_v2_worker_pool.go at v6.49.2: Optional and Computed) in
// nestedComputed.

// resourceTypes are the pulumi-gcp Go SDK types of the resources eventpipe declares.
var resourceTypes = map[string]any{
	"gcp:cloudrunv2/service:Service":                         cloudrunv2.Service{},
	"gcp:cloudrunv2/serviceIamMember:ServiceIamMember":       cloudrunv2.ServiceIamMember{},
	"gcp:cloudrunv2/workerPool:WorkerPool":                   cloudrunv2.WorkerPool{},
	"gcp:firestore/database:Database":                        firestore.Database{},
	"gcp:firestore/field:Field":                              firestore.Field{},
	"gcp:logging/metric:Metric":                              logging.Metric{},
	"gcp:monitoring/alertPolicy:AlertPolicy":                 monitoring.AlertPolicy{},
	"gcp:monitoring/customService:CustomService":             monitoring.CustomService{},
	"gcp:monitoring/slo:Slo":                                 monitoring.Slo{},
	"gcp:projects/iAMMember:IAMMember":                       projects.IAMMember{},
	"gcp:projects/service:Service":                           projects.Service{},
	"gcp:projects/serviceIdentity:ServiceIdentity":           projects.ServiceIdentity{},
	"gcp:pubsub/subscription:Subscription":                   pubsub.Subscription{},
	"gcp:pubsub/subscriptionIAMMember:SubscriptionIAMMember": pubsub.SubscriptionIAMMember{},
	"gcp:pubsub/topic:Topic":                                 pubsub.Topic{},
	"gcp:pubsub/topicIAMMember:TopicIAMMember":               pubsub.TopicIAMMember{},
	"gcp:secretmanager/secret:Secret":                        secretmanager.Secret{},
	"gcp:secretmanager/secretIamMember:SecretIamMember":      secretmanager.SecretIamMember{},
	"gcp:secretmanager/secretVersion:SecretVersion":          secretmanager.SecretVersion{},
	"gcp:serviceaccount/account:Account":                     serviceaccount.Account{},
	"gcp:serviceaccount/iAMMember:IAMMember":                 serviceaccount.IAMMember{},
}

var outputType = reflect.TypeFor[pulumi.Output]()

// Computed reports whether the top-level field key of resource type typ is computed in
// the pulumi-gcp schema (see above): its Go SDK output is neither a pointer, a map nor
// an array output. Unknown types and fields are not computed.
func Computed(typ, key string) bool {
	r, ok := resourceTypes[typ]
	if !ok || r == nil {
		return false
	}
	t := reflect.TypeOf(r)
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Tag.Get("pulumi") != key || !f.Type.Implements(outputType) {
			continue
		}
		name := f.Type.Name()
		return !strings.HasSuffix(name, "PtrOutput") && !strings.HasSuffix(name, "MapOutput") && !strings.HasSuffix(name, "ArrayOutput")
	}
	return false
}

// nestedComputed lists, by resource type, nested fields (dotted paths, array elements
// without an index) that are optional-and-computed in the provider's schema.
var nestedComputed = map[string][]string{
	"gcp:cloudrunv2/service:Service": {
		"template.maxInstanceRequestConcurrency", "template.scaling", "template.serviceAccount", "template.timeout",
		"template.containers.ports", "template.containers.resources", "template.containers.resources.limits",
		"template.containers.startupProbe", "template.vpcAccess.egress",
	},
	"gcp:cloudrunv2/workerPool:WorkerPool": {
		"template.serviceAccount", "template.containers.resources", "template.containers.resources.limits",
		"template.vpcAccess.egress",
	},
}

func computedPath(typ, path string) bool {
	if !strings.Contains(path, ".") {
		return Computed(typ, path)
	}
	for _, p := range nestedComputed[typ] {
		if p == path {
			return true
		}
	}
	return false
}

// readBack is the state the API reports for a resource of typ created or updated with
// inputs (plain values; the map is not changed): what the stand-in knows the API fills
// in or normalises, each with its source.
func readBack(typ string, inputs map[string]any) map[string]any {
	state := deepCopy(inputs).(map[string]any)
	switch typ {
	case "gcp:cloudrunv2/service:Service", "gcp:cloudrunv2/workerPool:WorkerPool":
		// launch_stage (Optional, Computed): "On read (or output), describes whether the
		// resource uses preview features" (the schema's description); eventpipe uses none,
		// and worker pools are GA, so the API reports GA whatever was sent.
		state["launchStage"] = "GA"
		tmpl, _ := state["template"].(map[string]any)
		service := typ == "gcp:cloudrunv2/service:Service"
		if service {
			// template.max_instance_request_concurrency and timeout (Optional, Computed):
			// Cloud Run's defaults, 80 requests and 300 s.
			setDefault(tmpl, "maxInstanceRequestConcurrency", float64(80))
			setDefault(tmpl, "timeout", "300s")
			setDefault(state, "ingress", "INGRESS_TRAFFIC_ALL")
		}
		for _, c := range list(tmpl, "containers") {
			res, set := c["resources"].(map[string]any)
			if !set {
				// resources (Optional, Computed): 1 CPU and 512 MiB, CPU only during requests.
				c["resources"] = map[string]any{"limits": map[string]any{"cpu": "1000m", "memory": "512Mi"}, "cpuIdle": service}
				continue
			}
			if _, ok := res["cpuIdle"]; !ok && service {
				// cpu_idle (Optional): "True by default if the parent resources field is
				// not set. However, if resources is set, this field must be explicitly set
				// to true to preserve the default behavior": with resources and without
				// cpuIdle, the container's CPU is always allocated.
				res["cpuIdle"] = false
			}
		}
	case "gcp:pubsub/subscription:Subscription":
		// ack_deadline_seconds (Optional, Computed): 10 s when not set;
		// message_retention_duration: 7 days.
		setDefault(state, "ackDeadlineSeconds", float64(10))
		setDefault(state, "messageRetentionDuration", "604800s")
	case "gcp:firestore/field:Field":
		// ttl_config.state (Output only): CREATING until the policy is active.
		if ttl, ok := state["ttlConfig"].(map[string]any); ok {
			ttl["state"] = "CREATING"
		}
	}
	return state
}

func setDefault(m map[string]any, key string, v any) {
	if m == nil {
		return
	}
	if _, ok := m[key]; !ok {
		m[key] = v
	}
}

func deepCopy(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = deepCopy(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = deepCopy(e)
		}
		return out
	}
	return v
}

// changed reports the top-level fields whose planned value differs from the state (see
// the comment above): news are the new inputs, olds the previous inputs, state the state.
func changed(typ string, olds, news, state map[string]any) []string {
	var out []string
	keys := map[string]bool{}
	for k := range olds {
		keys[k] = true
	}
	for k := range news {
		keys[k] = true
	}
	for k := range keys {
		if strings.HasPrefix(k, "__") {
			continue
		}
		n, inNew := news[k]
		s, inState := state[k]
		if !inState {
			s, inState = olds[k]
		}
		switch {
		case inNew && n != nil:
			if !inState || !covers(typ, k, olds[k], n, s) {
				out = append(out, k)
			}
		case inState && !computedPath(typ, k) && !zero(s):
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// covers reports whether the planned value of the field at path, given the new input n
// (and the previous input o), equals the state s: fields of n must equal the state's;
// fields the state has that n leaves out are the API's, no diff when computed or zero.
func covers(typ, path string, o, n, s any) bool {
	switch nv := n.(type) {
	case map[string]any:
		sv, ok := s.(map[string]any)
		if !ok {
			return false
		}
		ov, _ := o.(map[string]any)
		for k, e := range nv {
			se, ok := sv[k]
			if e == nil {
				continue
			}
			if !ok || !covers(typ, path+"."+k, ov[k], e, se) {
				return false
			}
		}
		for k, se := range sv {
			if _, ok := nv[k]; ok {
				continue
			}
			// A field the inputs had and now leave out is planned away unless computed;
			// one only the API set is the API's default.
			if _, had := ov[k]; had && !computedPath(typ, path+"."+k) && !zero(se) {
				return false
			}
		}
		return true
	case []any:
		sv, ok := s.([]any)
		if !ok || len(sv) != len(nv) {
			return false
		}
		ov, _ := o.([]any)
		for i := range nv {
			var oe any
			if i < len(ov) {
				oe = ov[i]
			}
			if !covers(typ, path, oe, nv[i], sv[i]) {
				return false
			}
		}
		return true
	}
	return equal(n, s)
}

// zero reports whether v is its type's zero value, which SDKv2 does not tell from unset.
func zero(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case bool:
		return !x
	case string:
		return x == ""
	case float64:
		return x == 0
	case []any:
		return len(x) == 0
	case map[string]any:
		return len(x) == 0
	}
	return false
}
