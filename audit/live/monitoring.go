package live

import (
	"context"
	"errors"
	"fmt"
	"time"

	"cloud.google.com/go/monitoring/apiv3/v2/monitoringpb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/eventpipe/eventpipe/audit/inventory"
)

// readAlertPolicies reads the project's alert policies, which the alert coverage rules
// look for.
func (r *reader) readAlertPolicies(ctx context.Context) {
	name := inventory.ProjectName(r.p.ID)
	if r.c.AlertPolicies == nil {
		r.gap(inventory.GapAlertPolicies, name, errors.New(r.c.notRead("Cloud Monitoring")))
		return
	}
	policies, err := collect(r.c.AlertPolicies.ListAlertPolicies(ctx, &monitoringpb.ListAlertPoliciesRequest{Name: name}).All())
	if err != nil {
		r.gap(inventory.GapAlertPolicies, name, refused("listing alert policies", access{"monitoring.alertPolicies.list", "roles/monitoring.viewer"}, err))
		return
	}
	r.p.AlertPolicies, r.p.AlertPoliciesRead = policies, true
}

// OldestUnackedMetric is the Cloud Monitoring metric of a subscription's oldest
// unacknowledged message age, in seconds.
const OldestUnackedMetric = "pubsub.googleapis.com/subscription/oldest_unacked_message_age"

// readBacklog reads each subscription's largest oldest-unacked-message age over the last
// BacklogWindow. A subscription without a point in the window has no figure.
func (r *reader) readBacklog(ctx context.Context) {
	name := inventory.ProjectName(r.p.ID)
	if r.c.Metrics == nil {
		r.gap(inventory.GapBacklog, name, errors.New(r.c.notRead("Cloud Monitoring")))
		return
	}
	end := r.opts.Now()
	backlog := map[string]time.Duration{}
	for ts, err := range r.c.Metrics.ListTimeSeries(ctx, BacklogRequest(r.p.ID, end.Add(-r.opts.BacklogWindow), end)).All() {
		if err != nil {
			r.gap(inventory.GapBacklog, name, refused("reading "+OldestUnackedMetric, access{"monitoring.timeSeries.list", "roles/monitoring.viewer"}, err))
			return
		}
		sub := ts.GetResource().GetLabels()["subscription_id"]
		if sub == "" {
			continue
		}
		full := inventory.SubscriptionName(r.p.ID, sub)
		for _, pt := range ts.GetPoints() {
			age := time.Duration(pt.GetValue().GetInt64Value()) * time.Second
			if age > backlog[full] {
				backlog[full] = age
			}
		}
	}
	r.p.Backlog = backlog
}

// BacklogRequest asks Cloud Monitoring for every subscription's oldest unacknowledged
// message age in project between start and end, as one maximum per subscription.
func BacklogRequest(project string, start, end time.Time) *monitoringpb.ListTimeSeriesRequest {
	return &monitoringpb.ListTimeSeriesRequest{
		Name:   inventory.ProjectName(project),
		Filter: fmt.Sprintf(`metric.type = %q AND resource.type = "pubsub_subscription"`, OldestUnackedMetric),
		Interval: &monitoringpb.TimeInterval{
			StartTime: timestamppb.New(start),
			EndTime:   timestamppb.New(end),
		},
		Aggregation: &monitoringpb.Aggregation{
			AlignmentPeriod:  durationpb.New(end.Sub(start)),
			PerSeriesAligner: monitoringpb.Aggregation_ALIGN_MAX,
		},
		View: monitoringpb.ListTimeSeriesRequest_FULL,
	}
}
