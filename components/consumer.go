package components

import (
	"fmt"
	"sort"
	"strings"

	"github.com/eventpipe/eventpipe/spec"
	"github.com/pulumi/pulumi-gcp/sdk/v8/go/gcp/cloudrunv2"
	"github.com/pulumi/pulumi-gcp/sdk/v8/go/gcp/projects"
	"github.com/pulumi/pulumi-gcp/sdk/v8/go/gcp/serviceaccount"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// Environment variables the consumer binary reads (the runtime contract).
// PORT is set by Cloud Run itself from the container port and may not be set
// by the service definition.
const (
	EnvEnvironment       = "EVENTPIPE_ENV"
	EnvService           = "EVENTPIPE_SERVICE"
	EnvVersion           = "EVENTPIPE_VERSION"
	EnvStore             = "EVENTPIPE_STORE"
	EnvRoutes            = "EVENTPIPE_ROUTES"
	EnvOIDCAudience      = "EVENTPIPE_OIDC_AUDIENCE"
	EnvPushAccounts      = "EVENTPIPE_PUSH_ACCOUNTS"
	EnvPullSubscriptions = "EVENTPIPE_PULL_SUBSCRIPTIONS"
	EnvCollectionPrefix  = "EVENTPIPE_COLLECTION_PREFIX"
)

// Cloud Run ingress settings by spec value.
func ingressSetting(ingress string) string {
	if ingress == spec.IngressInternalLB {
		return "INGRESS_TRAFFIC_INTERNAL_LOAD_BALANCER"
	}
	return "INGRESS_TRAFFIC_INTERNAL_ONLY"
}

// ConsumerArgs configures a Consumer.
type ConsumerArgs struct {
	// Stack supplies project, region and environment.
	Stack *spec.Stack
	// Pipeline is the validated pipeline the consumer serves.
	Pipeline *spec.Pipeline
}

// Consumer is the Cloud Run v2 service that runs the eventpipe consumer for
// one pipeline, with least privilege:
//
//   - its own service account, granted only roles/datastore.user on the
//     project of its Firestore store (no role at all for other stores) — pull
//     subscriptions grant it roles/pubsub.subscriber on themselves;
//   - restricted ingress (internal by default; Pub/Sub push from the same
//     project is internal traffic) and no public invoker: only the push
//     service accounts get roles/run.invoker, from their Subscription;
//   - the push OIDC audience registered as a custom audience, so Cloud Run
//     accepts the tokens, and passed to the consumer to check them again;
//   - a request timeout equal to the push ack deadline, so Pub/Sub does not
//     redeliver while a request is still running;
//   - startup and liveness probes on the consumer's health endpoint;
//   - the environment of the consumer contract (store URL, routes, audience,
//     allowed push accounts, pull subscriptions, collection prefix);
//   - for pull pipelines, CPU that is always allocated (no CPU throttling
//     between requests), because pulling happens outside requests.
type Consumer struct {
	pulumi.ResourceState

	// Service is the Cloud Run service.
	Service *cloudrunv2.Service
	// Account is the consumer's own service account.
	Account *serviceaccount.Account
	// URI is the service URL.
	URI pulumi.StringOutput
	// ServiceName is the Cloud Run service name.
	ServiceName pulumi.StringOutput
}

// NewConsumer declares a Consumer named name.
func NewConsumer(ctx *pulumi.Context, name string, args *ConsumerArgs, opts ...pulumi.ResourceOption) (*Consumer, error) {
	st, p := args.Stack, args.Pipeline
	k := &p.Consumer
	c := &Consumer{}
	if err := ctx.RegisterComponentResource(TypeConsumer, name, c, opts...); err != nil {
		return nil, fmt.Errorf("register consumer component %s: %w", name, err)
	}
	parent := pulumi.Parent(c)
	project := pulumi.String(st.Project)

	account, err := serviceaccount.NewAccount(ctx, name+"-run", &serviceaccount.AccountArgs{
		Project:     project,
		AccountId:   pulumi.String(p.ConsumerAccountID()),
		DisplayName: pulumi.String("eventpipe consumer " + p.Name),
		Description: pulumi.String("Runs the " + k.ServiceName + " consumer; may only use the store"),
	}, parent)
	if err != nil {
		return nil, fmt.Errorf("declare consumer service account of %s: %w", p.Name, err)
	}
	c.Account = account
	// The store grant goes to the project the Firestore database lives in,
	// which may be another project than the stack's. PostgreSQL, bbolt and
	// mem stores need no Google IAM role, so they get none (least privilege).
	var dependsOn []pulumi.Resource
	if storeProject, _, ok := k.FirestoreDatabase(); ok {
		storeGrant, err := projects.NewIAMMember(ctx, name+"-run-datastore-user", &projects.IAMMemberArgs{
			Project: pulumi.String(storeProject),
			Role:    pulumi.String(RoleDatastore),
			Member:  account.Member,
		}, parent)
		if err != nil {
			return nil, fmt.Errorf("grant consumer datastore.user for %s: %w", p.Name, err)
		}
		dependsOn = append(dependsOn, storeGrant)
	}

	pulls := st.PullSubscriptions(p)
	labels := st.Labels(p, spec.RoleConsumer)
	probePath := pulumi.String(spec.HealthPath)
	port := pulumi.Int(spec.ContainerPort)
	svc, err := cloudrunv2.NewService(ctx, name, &cloudrunv2.ServiceArgs{
		Project:         project,
		Location:        pulumi.String(st.Region),
		Name:            pulumi.String(k.ServiceName),
		Description:     pulumi.String(fmt.Sprintf("eventpipe consumer of pipeline %s (%s)", p.Name, st.Env)),
		Ingress:         pulumi.String(ingressSetting(k.Ingress)),
		Labels:          pulumi.ToStringMap(labels),
		CustomAudiences: pulumi.ToStringArray([]string{k.Audience}),
		Template: &cloudrunv2.ServiceTemplateArgs{
			ServiceAccount:                account.Email,
			Timeout:                       pulumi.String(spec.Seconds(k.RequestTimeout.D)),
			MaxInstanceRequestConcurrency: pulumi.Int(*k.Concurrency),
			Labels:                        pulumi.ToStringMap(labels),
			Scaling: &cloudrunv2.ServiceTemplateScalingArgs{
				MinInstanceCount: pulumi.Int(*k.MinInstances),
				MaxInstanceCount: pulumi.Int(*k.MaxInstances),
			},
			Containers: cloudrunv2.ServiceTemplateContainerArray{&cloudrunv2.ServiceTemplateContainerArgs{
				Name:  pulumi.String("consumer"),
				Image: pulumi.String(k.Image),
				Ports: &cloudrunv2.ServiceTemplateContainerPortsArgs{ContainerPort: port},
				Envs:  consumerEnv(st, p, pulls),
				Resources: &cloudrunv2.ServiceTemplateContainerResourcesArgs{
					Limits:  pulumi.StringMap{"cpu": pulumi.String(k.CPU), "memory": pulumi.String(k.Memory)},
					CpuIdle: pulumi.Bool(len(pulls) == 0),
				},
				StartupProbe: &cloudrunv2.ServiceTemplateContainerStartupProbeArgs{
					HttpGet:          &cloudrunv2.ServiceTemplateContainerStartupProbeHttpGetArgs{Path: probePath, Port: port},
					PeriodSeconds:    pulumi.Int(2),
					FailureThreshold: pulumi.Int(15),
					TimeoutSeconds:   pulumi.Int(1),
				},
				LivenessProbe: &cloudrunv2.ServiceTemplateContainerLivenessProbeArgs{
					HttpGet:          &cloudrunv2.ServiceTemplateContainerLivenessProbeHttpGetArgs{Path: probePath, Port: port},
					PeriodSeconds:    pulumi.Int(10),
					FailureThreshold: pulumi.Int(3),
					TimeoutSeconds:   pulumi.Int(2),
				},
			}},
		},
	}, parent, pulumi.DependsOn(dependsOn))
	if err != nil {
		return nil, fmt.Errorf("declare consumer service %s: %w", k.ServiceName, err)
	}
	c.Service, c.URI, c.ServiceName = svc, svc.Uri, svc.Name
	if err := ctx.RegisterResourceOutputs(c, pulumi.Map{
		"uri":            svc.Uri,
		"serviceName":    svc.Name,
		"serviceAccount": account.Email,
	}); err != nil {
		return nil, fmt.Errorf("register consumer outputs %s: %w", name, err)
	}
	return c, nil
}

// consumerEnv is the consumer's environment, in a fixed order.
func consumerEnv(st *spec.Stack, p *spec.Pipeline, pulls []string) cloudrunv2.ServiceTemplateContainerEnvArray {
	k := &p.Consumer
	vars := map[string]string{
		EnvEnvironment:       st.Env,
		EnvService:           k.ServiceName,
		EnvVersion:           k.Version(),
		EnvOIDCAudience:      k.Audience,
		EnvPushAccounts:      strings.Join(st.PushAccounts(p), ","),
		EnvPullSubscriptions: strings.Join(pulls, ","),
		EnvCollectionPrefix:  k.CollectionPrefix,
	}
	if k.Routes != "" {
		vars[EnvRoutes] = k.Routes
	}
	names := make([]string, 0, len(vars)+1)
	for n := range vars {
		names = append(names, n)
	}
	names = append(names, EnvStore)
	sort.Strings(names)
	env := make(cloudrunv2.ServiceTemplateContainerEnvArray, 0, len(names))
	for _, n := range names {
		var value pulumi.StringInput = pulumi.String(vars[n])
		if n == EnvStore {
			value = pulumi.String(k.Store)
			if st.StoreSecret && k.Store == st.Store {
				// The store URL may carry a password: keep it secret in state and plans.
				value = pulumi.ToSecret(pulumi.String(k.Store)).(pulumi.StringOutput)
			}
		}
		env = append(env, &cloudrunv2.ServiceTemplateContainerEnvArgs{Name: pulumi.String(n), Value: value})
	}
	return env
}
