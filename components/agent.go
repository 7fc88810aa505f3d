package components

import (
	"fmt"
	"strconv"

	"github.com/eventpipe/eventpipe/spec"
	"github.com/pulumi/pulumi-gcp/sdk/v8/go/gcp/organizations"
	"github.com/pulumi/pulumi-gcp/sdk/v8/go/gcp/projects"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// declarePubSubAgent declares the Pub/Sub service agent of the scope's
// project, named NAME-pubsub-agent: a projects.ServiceIdentity, which makes
// Google create the agent when the project has none yet, so the grants
// naming it (which wait for it) never name an account that does not exist.
// The grants name it from the configured project number, known at preview
// for the policies to read; the number is checked against the project's
// own (getProject) and a wrong one fails the deployment before any grant,
// naming the key to fix. sc.ready, when set, is waited for (getProject is
// a Cloud Resource Manager call).
func declarePubSubAgent(ctx *pulumi.Context, name string, sc *scope, parent pulumi.ResourceOption) (*projects.ServiceIdentity, error) {
	projectID := sc.project
	if sc.ready != nil {
		// The project id, once ready is: an argument that is not known yet holds
		// the call back (DependsOnInputs would not: the Go SDK v3.200 never
		// resolves an invoke whose DependsOnInputs is unknown at preview).
		projectID = pulumi.All(sc.project, sc.ready).ApplyT(func(v []any) string { return v[0].(string) }).(pulumi.StringOutput)
	}
	actual := organizations.LookupProjectOutput(ctx, organizations.LookupProjectOutputArgs{ProjectId: projectID}).Number()
	kind := "subscription"
	if sc.inPipeline {
		kind = "pipeline"
	}
	project := pulumi.All(sc.project, sc.projectNumber, actual).ApplyT(func(v []any) (string, error) {
		project, configured, number := v[0].(string), v[1].(string), v[2].(string)
		if number != "" && number != configured {
			return "", sc.d.declared(argsError(kind, name, spec.Errors{{
				Path:    spec.Namespace + ":" + spec.KeyProjectNumber,
				Value:   strconv.Quote(configured),
				Allowed: "the number of project " + project + ", " + number,
				Fix: "set projectNumber (eventpipe:projectNumber) to " + strconv.Quote(number) +
					": it names the Pub/Sub service agent that dead-letters and signs push tokens, and any other number grants a stranger's account",
			}}))
		}
		return project, nil
	}).(pulumi.StringOutput)
	agent, err := projects.NewServiceIdentity(ctx, name+"-pubsub-agent", &projects.ServiceIdentityArgs{
		Project: project,
		Service: pulumi.String(APIPubSub),
	}, parent)
	if err != nil {
		return nil, fmt.Errorf("declare the Pub/Sub service agent of %s: %w", name, err)
	}
	return agent, nil
}

// needsAgent reports whether any subscription of the scope names the
// Pub/Sub service agent: to dead-letter, or to sign push tokens.
func (sc *scope) needsAgent() bool {
	for _, sub := range sc.pipeline.Subscriptions {
		if sub != nil && (sub.HasDLQ() || sub.Push()) {
			return true
		}
	}
	return false
}
