package alerts

import (
	"fmt"
	"sort"
	"strings"
)

// The consumer's log fields these metrics read (the cross-part contract in
// the consumer's README "Log fields" and consumer/logfields). alerts does not
// import the consumer: the names are the contract, repeated here on purpose.
const (
	fieldEnv        = "env"
	fieldRoute      = "route"
	fieldOutcome    = "outcome"
	fieldErrorCode  = "error_code"
	fieldErrorType  = "error_type"
	fieldLeaseEvent = "lease_event"
)

// Values of those fields the metrics and policies match. Functions, not
// variables, so no caller can change a shared slice.
func outcomes() []string {
	return []string{"applied", "duplicate", "stale_ignored", "poison", "retry"}
}

func leaseEvents() []string { return []string{"acquire_failed", "heartbeat_failed", "stale_found"} }

func transientCodes() []string {
	return []string{"RESOURCE_EXHAUSTED", "UNAVAILABLE", "DEADLINE_EXCEEDED"}
}

func permissionCodes() []string { return []string{"PERMISSION_DENIED", "UNAUTHENTICATED"} }

// grpcErrorCodes are the canonical gRPC codes other than OK: Firestore
// reports its errors with them, PostgreSQL with SQLSTATEs (not counted).
func grpcErrorCodes() []string {
	return []string{
		"CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND",
		"ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION",
		"ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS",
		"UNAUTHENTICATED",
	}
}

// Metric IDs: the last element of each log-based metric's name.
const (
	MetricOutcomes        = "outcomes"
	MetricFirestoreErrors = "firestore_errors"
	MetricLeaseEvents     = "lease_events"
	MetricPoison          = "poison"
)

// MetricSpec is one log-based metric: a DELTA INT64 counter of the log
// entries matching Filter, with one label per extractor.
type MetricSpec struct {
	ID          string
	Name        string // logging metric name: eventpipe/ENV/PIPELINE/ID
	Description string
	Filter      string
	// Labels maps label key to its extractor, EXTRACT(jsonPayload.FIELD).
	// Every label reads a field with a small closed value set (or the
	// route, bounded by the routes file), keeping cardinality low.
	Labels map[string]string
}

// Type is the metric's Cloud Monitoring type.
func (m MetricSpec) Type() string { return "logging.googleapis.com/user/" + m.Name }

// metricName is the log-based metric name of id for t. '/' builds a
// hierarchy the Logging console groups by.
func metricName(t Target, id string) string {
	return "eventpipe/" + t.Env + "/" + t.Pipeline + "/" + id
}

// logBase is the part of every log filter that selects this pipeline's
// consumer log lines.
func logBase(t Target) string {
	return strings.Join([]string{
		t.logsOf(),
		`jsonPayload.` + fieldEnv + `=` + quote(t.Env),
	}, " AND ")
}

// anyOf is a Logging filter term matching field against any of values.
func anyOf(field string, values []string) string {
	q := make([]string, len(values))
	for i, v := range values {
		q[i] = quote(v)
	}
	return "jsonPayload." + field + "=(" + strings.Join(q, " OR ") + ")"
}

// extract is the extractor expression of a JSON payload field.
func extract(field string) string { return "EXTRACT(jsonPayload." + field + ")" }

// quote renders s as a double-quoted filter string.
func quote(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

// Metrics returns the log-based metrics of t, sorted by ID.
func Metrics(t Target) []MetricSpec {
	base := logBase(t)
	ms := []MetricSpec{
		{
			ID:          MetricOutcomes,
			Description: fmt.Sprintf("Messages handled by the %s consumer (%s), by route and outcome.", t.Pipeline, t.Env),
			Filter:      base + " AND " + anyOf(fieldOutcome, outcomes()),
			Labels:      map[string]string{"route": extract(fieldRoute), "outcome": extract(fieldOutcome)},
		},
		{
			ID:          MetricFirestoreErrors,
			Description: fmt.Sprintf("Firestore errors of the %s consumer (%s), by gRPC code and error class.", t.Pipeline, t.Env),
			Filter:      base + " AND " + anyOf(fieldErrorCode, grpcErrorCodes()),
			Labels:      map[string]string{"error_code": extract(fieldErrorCode), "error_type": extract(fieldErrorType)},
		},
		{
			ID:          MetricLeaseEvents,
			Description: fmt.Sprintf("Lease failures of the %s consumer (%s): acquire failed, heartbeat failed, stale lease found by the sweeper.", t.Pipeline, t.Env),
			Filter:      base + " AND " + anyOf(fieldLeaseEvent, leaseEvents()),
			Labels:      map[string]string{"lease_event": extract(fieldLeaseEvent)},
		},
		{
			ID:          MetricPoison,
			Description: fmt.Sprintf("Poison messages recorded by the %s consumer (%s), by route.", t.Pipeline, t.Env),
			Filter:      base + " AND jsonPayload." + fieldOutcome + `="poison"`,
			Labels:      map[string]string{"route": extract(fieldRoute)},
		},
	}
	for i := range ms {
		ms[i].Name = metricName(t, ms[i].ID)
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].ID < ms[j].ID })
	return ms
}

// promName maps a Cloud Monitoring metric type to its PromQL name, by
// Google's rule: the first '/' becomes ':', every other character outside
// [A-Za-z0-9_] becomes '_'.
func promName(metricType string) string {
	domain, path, _ := strings.Cut(metricType, "/")
	return promSafe(domain) + ":" + promSafe(path)
}

// promSafe replaces every character outside [A-Za-z0-9_] with '_'.
func promSafe(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return '_'
	}, s)
}
