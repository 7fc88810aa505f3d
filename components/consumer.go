package components

import (
	"fmt"
	"maps"
	"sort"
	"strconv"
	"strings"

	"github.com/eventpipe/eventpipe/consumer/limits"
	"github.com/eventpipe/eventpipe/consumer/settings"
	"github.com/eventpipe/eventpipe/spec"
	"github.com/pulumi/pulumi-gcp/sdk/v8/go/gcp/cloudrunv2"
	"github.com/pulumi/pulumi-gcp/sdk/v8/go/gcp/projects"
	"github.com/pulumi/pulumi-gcp/sdk/v8/go/gcp/secretmanager"
	"github.com/pulumi/pulumi-gcp/sdk/v8/go/gcp/serviceaccount"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// Cloud Run ingress settings by spec value.
func ingressSetting(ingress string) string {
	switch ingress {
	case spec.IngressInternalLB:
		return "INGRESS_TRAFFIC_INTERNAL_LOAD_BALANCER"
	case spec.IngressAll:
		return "INGRESS_TRAFFIC_ALL"
	}
	return "INGRESS_TRAFFIC_INTERNAL_ONLY"
}

// executionEnvironment is Cloud Run's name of a spec execution environment.
func executionEnvironment(env string) string {
	return "EXECUTION_ENVIRONMENT_" + strings.ToUpper(env)
}

// ConsumerArgs configure a Consumer on its own (a Pipeline declares its
// consumer from PipelineArgs.Consumer).
type ConsumerArgs struct {
	// Project is the GCP project id the service is created in.
	Project pulumi.StringInput `pulumi:"project"`
	// Region is the Cloud Run region (default europe-west1).
	Region string `pulumi:"region,optional"`
	// Environment labels the service eventpipe_env and qualifies the consumer's records (default: the stack name).
	Environment string `pulumi:"environment,optional"`
	// Labels are extra GCP labels on the service.
	Labels map[string]string `pulumi:"labels,optional"`
	// Protect turns on Cloud Run deletion protection (default true).
	Protect *bool `pulumi:"protect,optional"`
	// TraceCollector adds the OpenTelemetry Collector as a sidecar, which the consumer exports its traces
	// to Cloud Trace through (default false).
	TraceCollector bool `pulumi:"traceCollector,optional"`
	// Consumer is the service's settings.
	Consumer spec.Consumer `pulumi:"consumer"`
	// PushAccounts are the emails of the service accounts whose push tokens the consumer accepts.
	PushAccounts pulumi.StringArrayInput `pulumi:"pushAccounts,optional"`
	// PullSubscriptions are the full names (projects/P/subscriptions/S) of the subscriptions the consumer pulls.
	PullSubscriptions pulumi.StringArrayInput `pulumi:"pullSubscriptions,optional"`
	// ProjectNumber is the project's number, which names the Cloud Run service agent a Shared VPC subnet
	// (consumer.vpcAccess in another project) is granted to; needed only then.
	ProjectNumber pulumi.StringInput `pulumi:"projectNumber,optional"`
	// Apis makes every resource wait for a Project's apis output: the APIs enabled and propagated.
	Apis pulumi.StringArrayInput `pulumi:"apis,optional"`
	// GrantPropagation is how long the consumer's service waits after the roles it needs are granted, for
	// the grants to take effect (default 120s; 0s: no wait).
	GrantPropagation string `pulumi:"grantPropagation,optional"`
}

// Consumer is the Cloud Run v2 service that runs the eventpipe consumer,
// with least privilege:
//
//   - its own service account (or the one given), granted only what its
//     store needs: roles/datastore.user on the project of a Firestore store,
//     roles/secretmanager.secretAccessor on the secret holding a store URL
//     with a password; pull subscriptions grant it roles/pubsub.subscriber;
//   - a store URL with a password kept in Secret Manager and read from there
//     (valueSource.secretKeyRef), never written into the service;
//   - restricted ingress (internal by default; Pub/Sub push from the same
//     project is internal traffic) and no public invoker: only the push
//     service accounts get roles/run.invoker, from their Subscription;
//   - the push OIDC audience registered as a custom audience, so Cloud Run
//     accepts the tokens, and passed to the consumer to check them again;
//   - a request timeout equal to the push ack deadline, so Pub/Sub does not
//     redeliver while a request is still running;
//   - sizes Cloud Run accepts (validated), the execution environment set
//     explicitly, GOMEMLIMIT from the memory limit, and a request concurrency
//     (and pull flow control) no higher than memory holds for messages of
//     the maximum size;
//   - startup and liveness probes on the consumer's health endpoint;
//   - for pulling consumers, CPU that is always allocated, because pulling
//     happens outside requests;
//   - deletion protection set explicitly: on unless protect is false.
type Consumer struct {
	pulumi.ResourceState

	// URI is the service URL (empty on a worker pool, which has none).
	URI pulumi.StringOutput `pulumi:"uri"`
	// ServiceName is the Cloud Run service (or worker pool) name.
	ServiceName pulumi.StringOutput `pulumi:"serviceName"`
	// ServiceAccount is the email of the account the consumer runs as.
	ServiceAccount pulumi.StringOutput `pulumi:"serviceAccount"`
	// RequestConcurrency is the request concurrency the service got: the configured one, or the lower
	// number of maximum-size messages its memory holds.
	RequestConcurrency pulumi.IntOutput `pulumi:"requestConcurrency"`

	// Service is the Cloud Run service (nil on a worker pool).
	Service *cloudrunv2.Service
	// WorkerPool is the Cloud Run worker pool of a consumer with workerPool (else nil).
	WorkerPool *cloudrunv2.WorkerPool
	// Account is the consumer's own service account (nil when it runs as a given one).
	Account *serviceaccount.Account
	// Member is the IAM member of the account the consumer runs as.
	Member pulumi.StringOutput
}

// NewConsumer validates args and declares a Consumer named name (also the
// prefix of its service name, account and collections unless args set them).
func NewConsumer(ctx *pulumi.Context, name string, args *ConsumerArgs, opts ...pulumi.ResourceOption) (_ *Consumer, err error) {
	defer declaredAt(calledAt(), &err)
	if args == nil {
		return nil, fmt.Errorf("consumer %s: no arguments; set at least project and consumer.image", name)
	}
	sc := newScope(ctx, name, args.Project, args.ProjectNumber, args.Region, args.Environment, args.Labels, args.Protect)
	sc.ready = args.Apis
	sc.stack.Setup.GrantPropagation = args.GrantPropagation
	sc.pipeline.Consumer = sc.d.consumer(&args.Consumer)
	sc.stack.Defaults.TraceCollector = &args.TraceCollector
	problems := sc.storeSecret(args.Consumer.StoreSecret)
	problems = append(problems, spec.ValidateSetup("", &sc.stack.Setup)...)
	if args.PullSubscriptions != nil {
		// The consumer pulls: validation asks for CPU and warm instances to match.
		sc.pipeline.Subscriptions = map[string]*spec.Subscription{"pull": {Key: "pull", Delivery: spec.DeliveryPull}}
	}
	errs := spec.ValidateConsumer(sc.stack, sc.pipeline, "consumer")
	if args.Consumer.WorkerPool && args.PushAccounts != nil {
		problems = append(problems, spec.FieldError{Path: "pushAccounts", Value: "(set)", Allowed: "none with consumer.workerPool",
			Fix: "remove pushAccounts, or consumer.workerPool: Pub/Sub pushes to an HTTP endpoint, which a worker pool does not have"})
	}
	if all := append(append(errs, problems...), deployProblems(sc.stack, sc.pipeline)...); len(all) > 0 {
		return nil, argsError("consumer", name, all)
	}
	pushAccounts := args.PushAccounts
	if pushAccounts == nil {
		pushAccounts = pulumi.StringArray{}
	}
	pulls := args.PullSubscriptions
	if pulls == nil {
		pulls = pulumi.StringArray{}
	}
	if v := args.Consumer.VPCAccess; v != nil && args.ProjectNumber == nil {
		if host, _, _ := sharedVPC(sc.stack.Project, "", v); host != "" {
			return nil, argsError("consumer", name, spec.Errors{{Path: "projectNumber", Value: "(unset)",
				Allowed: "the project's number with a Shared VPC subnet (consumer.vpcAccess in project " + host + ")",
				Fix:     "set projectNumber: it names the Cloud Run service agent that is granted roles/compute.networkUser on the subnet"}})
		}
	}
	return declareConsumer(ctx, name, sc, pushAccounts, pulls, args.PushAccounts != nil, args.PullSubscriptions != nil, nil, withAPIs(opts, args.Apis))
}

// beforeService declares what a consumer's service must wait for that
// needs the account it runs as (member): the subscriptions it pulls and
// their subscriber grants. It returns the resources to wait for.
type beforeService func(member pulumi.StringInput, parent pulumi.ResourceOption) ([]pulumi.Resource, error)

// declareConsumer declares the consumer of sc under name. pushAccounts are
// the emails it accepts push tokens of (pushing says whether there are
// any); pulls the subscriptions it pulls (pulling says whether there are
// any); before, if set, declares what the service waits for besides the
// consumer's own grants.
func declareConsumer(ctx *pulumi.Context, name string, sc *scope, pushAccounts, pulls pulumi.StringArrayInput,
	pushing, pulling bool, before beforeService, opts []pulumi.ResourceOption) (*Consumer, error) {
	p := sc.pipeline
	k := &p.Consumer
	c := &Consumer{}
	if err := register(ctx, TypeConsumer, name, c, opts); err != nil {
		return nil, fmt.Errorf("register consumer component %s: %w", name, err)
	}
	parent := pulumi.Parent(c)
	project := sc.project

	var email pulumi.StringInput
	if account := spec.Text(k.ServiceAccount); account != "" {
		email = sc.d.str(account)
	} else {
		account, err := serviceaccount.NewAccount(ctx, name+"-run", &serviceaccount.AccountArgs{
			Project:     project,
			AccountId:   pulumi.String(p.ConsumerAccountID()),
			DisplayName: pulumi.String("eventpipe consumer " + p.Name),
			Description: pulumi.String("Runs the " + k.ServiceName + " consumer; may only use the store"),
		}, parent)
		if err != nil {
			return nil, fmt.Errorf("declare consumer service account of %s: %w", p.Name, err)
		}
		c.Account, email = account, account.Email
	}
	c.ServiceAccount = email.ToStringOutput()
	c.Member = pulumi.Sprintf("serviceAccount:%s", email)

	// The store grant goes to the project the Firestore database lives in,
	// which may be another project than the service's. PostgreSQL, bbolt
	// and mem stores need no Google IAM role, so they get none (least
	// privilege); a store URL with a password gets its secret.
	var dependsOn []pulumi.Resource
	store := &cloudrunv2.ServiceTemplateContainerEnvArgs{Name: pulumi.String(settings.Store), Value: sc.d.str(k.Store)}
	if storeProject, _, ok := k.FirestoreDatabase(); ok {
		storeGrant, err := projects.NewIAMMember(ctx, name+"-run-datastore-user", &projects.IAMMemberArgs{
			Project: sc.d.str(storeProject),
			Role:    pulumi.String(RoleDatastore),
			Member:  c.Member,
		}, parent)
		if err != nil {
			return nil, fmt.Errorf("grant consumer datastore.user for %s: %w", p.Name, err)
		}
		dependsOn = append(dependsOn, storeGrant)
	}
	if k.StoreSecret != nil {
		ref, grant, err := declareStoreSecret(ctx, name, sc, k.StoreSecret, c.Member, parent)
		if err != nil {
			return nil, err
		}
		store = &cloudrunv2.ServiceTemplateContainerEnvArgs{Name: pulumi.String(settings.Store), ValueSource: ref}
		dependsOn = append(dependsOn, grant)
	}

	sqlGrants, err := grantCloudSQL(ctx, name, sc, c.Member, parent)
	if err != nil {
		return nil, err
	}
	dependsOn = append(dependsOn, sqlGrants...)
	if before != nil {
		waits, err := before(c.Member, parent)
		if err != nil {
			return nil, err
		}
		dependsOn = append(dependsOn, waits...)
	}

	netGrant, err := grantSharedVPC(ctx, name, sc, parent)
	if err != nil {
		return nil, err
	}
	if netGrant != nil {
		dependsOn = append(dependsOn, netGrant)
	}
	traced := sc.stack.Traced()
	var collector *cloudrunv2.ServiceTemplateContainerArgs
	if traced {
		var grant pulumi.Resource
		if collector, grant, err = declareTraceCollector(ctx, name, project, c.Member, !pulling, parent); err != nil {
			return nil, err
		}
		dependsOn = append(dependsOn, grant)
	}
	// The grants take effect minutes after they are made; Cloud Run checks the
	// secret's and the subnet's at deploy time, the consumer uses the others
	// as it starts (the store's, the subscriptions' it pulls) or as it runs
	// (the collector's).
	_, wait := sc.stack.Setup.Waits()
	if dependsOn, err = waitForGrants(ctx, name, wait, dependsOn, parent); err != nil {
		return nil, err
	}

	concurrency := k.RequestConcurrency()
	description := fmt.Sprintf("eventpipe consumer of pipeline %s (%s)", p.Name, sc.stack.Env)
	if concurrency < *k.Concurrency {
		note := fmt.Sprintf("request concurrency %d, not the configured %d: %s of memory holds %d messages of %d bytes (maxMessageBytes)",
			concurrency, *k.Concurrency, k.Memory, concurrency, *k.MaxMessageBytes)
		description += "; " + note
		_ = ctx.Log.Info("consumer "+k.ServiceName+": "+note, &pulumi.LogArgs{Resource: c})
	}
	labels := sc.labels(spec.RoleConsumer)
	port := pulumi.Int(spec.ContainerPort)
	consumer := &cloudrunv2.ServiceTemplateContainerArgs{
		Name:  pulumi.String("consumer"),
		Image: sc.d.image(spec.Text(k.Image)),
		Ports: &cloudrunv2.ServiceTemplateContainerPortsArgs{ContainerPort: port},
		Envs:  consumerEnv(sc, store, pushAccounts, pulls, pushing, pulling, traced),
		Resources: &cloudrunv2.ServiceTemplateContainerResourcesArgs{
			Limits:  pulumi.StringMap{"cpu": pulumi.String(k.CPU), "memory": pulumi.String(k.Memory)},
			CpuIdle: pulumi.Bool(!pulling),
		},
		StartupProbe: startupProbe(spec.HealthPath, spec.ContainerPort, 15),
		LivenessProbe: &cloudrunv2.ServiceTemplateContainerLivenessProbeArgs{
			HttpGet:          &cloudrunv2.ServiceTemplateContainerLivenessProbeHttpGetArgs{Path: pulumi.String(spec.HealthPath), Port: port},
			PeriodSeconds:    pulumi.Int(10),
			FailureThreshold: pulumi.Int(3),
			TimeoutSeconds:   pulumi.Int(2),
		},
	}
	if len(k.CloudSQLInstances) > 0 {
		consumer.VolumeMounts = cloudrunv2.ServiceTemplateContainerVolumeMountArray{
			&cloudrunv2.ServiceTemplateContainerVolumeMountArgs{Name: pulumi.String(cloudSQLVolume), MountPath: pulumi.String(cloudSQLMount)},
		}
	}
	var starts pulumi.StringArray // containers the consumer starts after
	containers := cloudrunv2.ServiceTemplateContainerArray{consumer}
	if collector != nil {
		// The consumer starts once the collector is ready to take its spans.
		starts = append(starts, pulumi.String(spec.CollectorContainer))
		containers = append(containers, collector)
	}
	if k.Handler != nil {
		// The consumer starts once its handler answers its health check.
		starts = append(starts, pulumi.String(spec.HandlerContainer))
		// Its CPU is allocated like the consumer's: Cloud Run allocates an
		// instance's CPU for all its containers alike.
		containers = append(containers, handlerContainer(k.Handler, !pulling))
	}
	if len(starts) > 0 {
		consumer.DependsOns = starts
	}
	svcArgs := &cloudrunv2.ServiceArgs{
		Project:     project,
		Location:    pulumi.String(sc.stack.Region),
		Name:        pulumi.String(k.ServiceName),
		Description: pulumi.String(description),
		Ingress:     pulumi.String(ingressSetting(k.Ingress)),
		Labels:      labels,
		// Explicit either way: the provider's default (true) makes every
		// destroy and replacement of an unprotected stack fail.
		DeletionProtection: pulumi.Bool(sc.stack.Protected(p)),
		CustomAudiences:    customAudiences(sc),
		Template: &cloudrunv2.ServiceTemplateArgs{
			ServiceAccount:                email,
			ExecutionEnvironment:          pulumi.String(executionEnvironment(k.ExecutionEnvironment)),
			Timeout:                       pulumi.String(spec.Seconds(spec.Length(k.RequestTimeout))),
			MaxInstanceRequestConcurrency: pulumi.Int(concurrency),
			Labels:                        labels,
			Scaling: &cloudrunv2.ServiceTemplateScalingArgs{
				MinInstanceCount: pulumi.Int(*k.MinInstances),
				MaxInstanceCount: pulumi.Int(*k.MaxInstances),
			},
			Containers: containers,
			VpcAccess:  vpcAccess(k.VPCAccess),
			Volumes:    cloudSQLVolumes(k.CloudSQLInstances),
		},
	}
	c.RequestConcurrency = pulumi.Int(concurrency).ToIntOutput()
	if k.WorkerPool {
		pool, err := declareWorkerPool(ctx, name, svcArgs, *k.MinInstances, parent, pulumi.DependsOn(dependsOn))
		if err != nil {
			return nil, err
		}
		c.WorkerPool, c.URI, c.ServiceName = pool, pulumi.String("").ToStringOutput(), pool.Name
	} else {
		svc, err := cloudrunv2.NewService(ctx, name, svcArgs, parent, pulumi.DependsOn(dependsOn))
		if err != nil {
			return nil, fmt.Errorf("declare consumer service %s: %w", k.ServiceName, err)
		}
		c.Service, c.URI, c.ServiceName = svc, svc.Uri, svc.Name
		// Callers reach the service only with roles/run.invoker: there is no
		// public invoker. One non-authoritative grant per calling account.
		for _, account := range k.CallbackAccounts {
			if _, err := cloudrunv2.NewServiceIamMember(ctx, name+"-callback-invoker-"+account, &cloudrunv2.ServiceIamMemberArgs{
				Project:  project,
				Location: svc.Location,
				Name:     svc.Name,
				Role:     pulumi.String(RoleRunInvoker),
				Member:   pulumi.String("serviceAccount:" + account),
			}, parent); err != nil {
				return nil, fmt.Errorf("grant %s run.invoker on consumer %s for callbacks: %w", account, k.ServiceName, err)
			}
		}
	}
	if err := ctx.RegisterResourceOutputs(c, outputs(c)); err != nil {
		return nil, fmt.Errorf("register consumer outputs %s: %w", name, err)
	}
	return c, nil
}

// declareStoreSecret keeps a store URL holding a password in a Secret
// Manager secret (SERVICE-store) readable by member, and returns the
// reference the service reads it through, pinned to the version just
// written (a new URL rolls out a new revision), and the grant to wait for.
func declareStoreSecret(ctx *pulumi.Context, name string, sc *scope, url pulumi.StringInput, member pulumi.StringInput,
	parent pulumi.ResourceOption) (*cloudrunv2.ServiceTemplateContainerEnvValueSourceArgs, pulumi.Resource, error) {
	k := &sc.pipeline.Consumer
	secret, err := secretmanager.NewSecret(ctx, name+"-store", &secretmanager.SecretArgs{
		Project:            sc.project,
		SecretId:           pulumi.String(k.ServiceName + "-store"),
		Labels:             sc.labels(spec.RoleConsumer),
		Replication:        &secretmanager.SecretReplicationArgs{Auto: &secretmanager.SecretReplicationAutoArgs{}},
		DeletionProtection: pulumi.Bool(sc.stack.Protected(sc.pipeline)),
	}, parent)
	if err != nil {
		return nil, nil, fmt.Errorf("declare store secret of %s: %w", k.ServiceName, err)
	}
	// A new URL is a new version; the old one is abandoned, not destroyed,
	// so a rollback to an earlier revision still finds the version it reads.
	version, err := secretmanager.NewSecretVersion(ctx, name+"-store", &secretmanager.SecretVersionArgs{
		Secret:         secret.ID(),
		SecretData:     pulumi.ToSecret(checkedStoreSecret(sc, url)).(pulumi.StringOutput),
		DeletionPolicy: pulumi.String("ABANDON"),
	}, parent)
	if err != nil {
		return nil, nil, fmt.Errorf("declare store secret version of %s: %w", k.ServiceName, err)
	}
	grant, err := secretmanager.NewSecretIamMember(ctx, name+"-store-accessor", &secretmanager.SecretIamMemberArgs{
		Project:  sc.project,
		SecretId: secret.SecretId,
		Role:     pulumi.String(RoleSecretAccessor),
		Member:   member,
	}, parent)
	if err != nil {
		return nil, nil, fmt.Errorf("grant consumer access to the store secret of %s: %w", k.ServiceName, err)
	}
	return &cloudrunv2.ServiceTemplateContainerEnvValueSourceArgs{
		SecretKeyRef: &cloudrunv2.ServiceTemplateContainerEnvValueSourceSecretKeyRefArgs{
			Secret:  secret.SecretId,
			Version: version.Version,
		},
	}, grant, nil
}

// customAudiences are the OIDC audiences Cloud Run accepts tokens for
// besides the service URL: the push audience, and the callback audience
// when callers use another one.
func customAudiences(sc *scope) pulumi.StringArray {
	k := &sc.pipeline.Consumer
	audiences := pulumi.StringArray{sc.d.str(k.Audience)}
	if k.CallbackAudience != "" && k.CallbackAudience != k.Audience {
		audiences = append(audiences, sc.d.str(k.CallbackAudience))
	}
	return audiences
}

// consumerEnv is the consumer's environment, by name (the variables of
// consumer/settings, with their values written as it writes them); store is
// the EVENTPIPE_STORE entry (a value or a secret reference). The push
// audience is set only when some account pushes (pushing): the consumer
// refuses an audience without push accounts. traced adds the variables that
// send its spans to the collector sidecar.
func consumerEnv(sc *scope, store *cloudrunv2.ServiceTemplateContainerEnvArgs,
	pushAccounts, pulls pulumi.StringArrayInput, pushing, pulling, traced bool) cloudrunv2.ServiceTemplateContainerEnvArray {
	k := &sc.pipeline.Consumer
	version := pulumi.String(k.Version()).ToStringOutput()
	if image := spec.Text(k.Image); image == placeholderImage {
		version = sc.d.str(image).ToStringOutput().ApplyT(spec.ImageVersion).(pulumi.StringOutput)
	}
	e := settings.Default()
	e.Environment, e.Service, e.CollectionPrefix = sc.stack.Env, k.ServiceName, k.CollectionPrefix
	e.RequestTimeout = spec.Length(k.RequestTimeout)
	e.Routes, e.CallbackAccounts = k.Routes, k.CallbackAccounts
	e.PullMaxOutstandingMessages = k.RequestConcurrency()
	if k.Handler != nil {
		e.HandlerURL, e.HandlerHealthPath = k.Handler.URL(), k.Handler.HealthPath
		e.HandlerTimeout, e.ShutdownTimeout = HandlerTimeout(e.RequestTimeout), settings.DefaultShutdownTimeout
	}
	set := func(names ...string) map[string]pulumi.StringInput {
		vars := map[string]pulumi.StringInput{}
		for _, n := range names {
			vars[n] = pulumi.String(e.Value(n))
		}
		return vars
	}
	vars := set(settings.Environment, settings.Service, settings.CollectionPrefix, settings.RequestTimeout)
	// Values other resources give (outputs), written as settings writes them.
	vars[settings.Version] = version
	vars[settings.PushAccounts] = join(pushAccounts)
	vars[settings.PullSubscriptions] = join(pulls)
	// The Go runtime collects before the container's limit is reached.
	vars[settings.MemoryLimit] = pulumi.String(strconv.FormatInt(limits.MemoryLimit(k.MemoryBytes()), 10))
	if pushing {
		vars[settings.OIDCAudience] = sc.d.str(k.Audience)
	}
	if len(k.CallbackAccounts) > 0 {
		maps.Copy(vars, set(settings.CallbackAccounts))
		vars[settings.CallbackAudience] = sc.d.str(k.CallbackAudience)
	}
	if k.Routes != "" {
		maps.Copy(vars, set(settings.Routes))
	}
	if pulling {
		maps.Copy(vars, set(settings.PullMaxOutstandingMessages))
	}
	if traced {
		maps.Copy(vars, traceCollectorEnv(sc.project))
	}
	if k.Handler != nil {
		// Keyed requests are answered before Cloud Run cuts them, and the
		// drain fits Cloud Run's termination grace.
		maps.Copy(vars, set(settings.HandlerURL, settings.HandlerHealthPath, settings.HandlerTimeout, settings.ShutdownTimeout))
	}
	names := append(spec.SortedKeys(vars), settings.Store)
	sort.Strings(names)
	env := make(cloudrunv2.ServiceTemplateContainerEnvArray, 0, len(names))
	for _, n := range names {
		if n == settings.Store {
			env = append(env, store)
			continue
		}
		env = append(env, &cloudrunv2.ServiceTemplateContainerEnvArgs{Name: pulumi.String(n), Value: vars[n]})
	}
	return env
}

// join is list written as the consumer reads a list variable.
func join(list pulumi.StringArrayInput) pulumi.StringOutput {
	return list.ToStringArrayOutput().ApplyT(settings.FormatList).(pulumi.StringOutput)
}
