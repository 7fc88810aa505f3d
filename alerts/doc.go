// Package alerts declares the monitoring of one eventpipe pipeline: log-based
// metrics on the consumer's JSON log fields, Cloud Monitoring alert policies
// with documented starting thresholds, markdown
// runbooks, and a request-based ack-ratio SLO per push subscription.
//
// The work is split in two steps so each can be tested on its own:
//
//   - NewPolicySet validates a Target (what to watch) and a Config (the
//     environment's thresholds) and returns a PolicySet: plain values describing
//     every metric, policy, condition and SLO.
//   - New declares a PolicySet as Pulumi resources (logging.Metric,
//     monitoring.AlertPolicy, monitoring.CustomService, monitoring.Slo) under
//     one component of type ComponentType.
//
// Warning and critical are always separate policies, because Cloud Monitoring
// sets severity once per policy. Ratios, rates and slopes are PromQL
// conditions; plain thresholds are metric-threshold conditions that treat
// missing data as "not violating"; Firestore permission errors are a
// log-match condition alone in its policy. The package depends on no other
// eventpipe package but the leaf internal ones: stacks → components → alerts.
package alerts
