package live

import (
	"context"
	"fmt"

	"cloud.google.com/go/iam/apiv1/iampb"
	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"golang.org/x/sync/errgroup"

	"github.com/eventpipe/eventpipe/audit/inventory"
)

// readPubSub lists the project's topics and subscriptions. Without them there is nothing
// to audit, so any error ends the read.
func (r *reader) readPubSub(ctx context.Context) error {
	parent := inventory.ProjectName(r.p.ID)
	var err error
	if r.p.Topics, err = collect(r.c.Topics.ListTopics(ctx, &pubsubpb.ListTopicsRequest{Project: parent}).All()); err != nil {
		return fmt.Errorf("listing topics (needs pubsub.topics.list, in roles/pubsub.viewer): %w", err)
	}
	if r.p.Subscriptions, err = collect(r.c.Subscriptions.ListSubscriptions(ctx, &pubsubpb.ListSubscriptionsRequest{Project: parent}).All()); err != nil {
		return fmt.Errorf("listing subscriptions (needs pubsub.subscriptions.list, in roles/pubsub.viewer): %w", err)
	}
	return nil
}

// readPolicies reads the IAM policy of every topic and subscription, a few at a time.
// Pub/Sub serves both through the IAMPolicy service on its own endpoint.
func (r *reader) readPolicies(ctx context.Context) error {
	var names []string
	for _, t := range r.p.Topics {
		names = append(names, t.GetName())
	}
	for _, s := range r.p.Subscriptions {
		names = append(names, s.GetName())
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(r.opts.Parallel)
	for _, name := range names {
		g.Go(func() error {
			pol, err := r.c.Topics.GetIamPolicy(gctx, &iampb.GetIamPolicyRequest{Resource: name})
			if err != nil {
				if ctxErr := gctx.Err(); ctxErr != nil {
					return ctxErr
				}
				r.gap(inventory.GapPolicy, name, refused("reading its IAM policy", access{"pubsub.topics.getIamPolicy or pubsub.subscriptions.getIamPolicy", "roles/iam.securityReviewer"}, err))
				return nil
			}
			r.setPolicy(name, pol)
			return nil
		})
	}
	return g.Wait()
}
