package model

import (
	"fmt"
	"strings"

	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/eventpipe/eventpipe/audit/inventory"
)

// topicInputs are a topic's pulumi-gcp inputs.
func topicInputs(project string, t *pubsubpb.Topic) map[string]any {
	in := map[string]any{
		"name":    inventory.ShortName(t.GetName()),
		"project": project,
	}
	putLabels(in, "labels", t.GetLabels())
	putDuration(in, "messageRetentionDuration", t.GetMessageRetentionDuration())
	if k := t.GetKmsKeyName(); k != "" {
		in["kmsKeyName"] = k
	}
	if msp := t.GetMessageStoragePolicy(); msp != nil && len(msp.GetAllowedPersistenceRegions()) > 0 {
		in["messageStoragePolicy"] = map[string]any{
			"allowedPersistenceRegions": msp.GetAllowedPersistenceRegions(),
			"enforceInTransit":          msp.GetEnforceInTransit(),
		}
	}
	if ss := t.GetSchemaSettings(); ss != nil && ss.GetSchema() != "" {
		in["schemaSettings"] = map[string]any{"schema": ss.GetSchema(), "encoding": ss.GetEncoding().String()}
	}
	return in
}

// unshownSubscription are the inputs of a subscription whose settings the source does not
// show: its name, project and labels, and every setting a rule reads unknown.
func unshownSubscription(project string, s *pubsubpb.Subscription) map[string]any {
	in := map[string]any{"name": inventory.ShortName(s.GetName()), "project": project, "topic": UnknownValue}
	if s.GetTopic() != "" {
		in["topic"] = s.GetTopic()
	}
	putLabels(in, "labels", s.GetLabels())
	for _, k := range []string{"deadLetterPolicy", "retryPolicy", "pushConfig", "expirationPolicy", "messageRetentionDuration", "ackDeadlineSeconds", "filter", "bigqueryConfig", "cloudStorageConfig"} {
		in[k] = UnknownValue
	}
	return in
}

// subscriptionInputs are a subscription's pulumi-gcp inputs. Settings the API reports as
// absent stay absent, so the rules apply Pub/Sub's defaults exactly as they do to a plan
// that leaves them out.
func subscriptionInputs(project string, s *pubsubpb.Subscription) map[string]any {
	in := map[string]any{
		"name":    inventory.ShortName(s.GetName()),
		"project": project,
		"topic":   s.GetTopic(),
	}
	if s.GetAckDeadlineSeconds() != 0 {
		in["ackDeadlineSeconds"] = int(s.GetAckDeadlineSeconds())
	}
	putLabels(in, "labels", s.GetLabels())
	putDuration(in, "messageRetentionDuration", s.GetMessageRetentionDuration())
	if s.GetRetainAckedMessages() {
		in["retainAckedMessages"] = true
	}
	if s.GetEnableMessageOrdering() {
		in["enableMessageOrdering"] = true
	}
	if s.GetEnableExactlyOnceDelivery() {
		in["enableExactlyOnceDelivery"] = true
	}
	if f := s.GetFilter(); f != "" {
		in["filter"] = f
	}
	// An expiration policy without a TTL never expires (pulumi-gcp: ttl ""); no policy at
	// all is Pub/Sub's default of 31 days, which the rules read from an absent block.
	if ep := s.GetExpirationPolicy(); ep != nil {
		in["expirationPolicy"] = map[string]any{"ttl": durationString(ep.GetTtl())}
	}
	if dlp := s.GetDeadLetterPolicy(); dlp != nil && dlp.GetDeadLetterTopic() != "" {
		policy := map[string]any{"deadLetterTopic": dlp.GetDeadLetterTopic()}
		if n := dlp.GetMaxDeliveryAttempts(); n != 0 {
			policy["maxDeliveryAttempts"] = int(n)
		}
		in["deadLetterPolicy"] = policy
	}
	if rp := s.GetRetryPolicy(); rp != nil {
		policy := map[string]any{}
		putDuration(policy, "minimumBackoff", rp.GetMinimumBackoff())
		putDuration(policy, "maximumBackoff", rp.GetMaximumBackoff())
		in["retryPolicy"] = policy
	}
	if push := pushInputs(s.GetPushConfig()); push != nil {
		in["pushConfig"] = push
	}
	if bq := s.GetBigqueryConfig(); bq != nil && bq.GetTable() != "" {
		in["bigqueryConfig"] = map[string]any{
			"table":               bq.GetTable(),
			"useTopicSchema":      bq.GetUseTopicSchema(),
			"useTableSchema":      bq.GetUseTableSchema(),
			"writeMetadata":       bq.GetWriteMetadata(),
			"dropUnknownFields":   bq.GetDropUnknownFields(),
			"serviceAccountEmail": bq.GetServiceAccountEmail(),
		}
	}
	if cs := s.GetCloudStorageConfig(); cs != nil && cs.GetBucket() != "" {
		in["cloudStorageConfig"] = storageInputs(cs)
	}
	if len(s.GetMessageTransforms()) > 0 {
		in["messageTransforms"] = transformInputs(s.GetMessageTransforms())
	}
	return in
}

// pushInputs is the pushConfig block, or nil for a subscription that does not push (the
// API returns an empty push config for pull and export subscriptions; pulumi-gcp has no
// block then).
func pushInputs(pc *pubsubpb.PushConfig) map[string]any {
	if pc.GetPushEndpoint() == "" {
		return nil
	}
	push := map[string]any{"pushEndpoint": pc.GetPushEndpoint()}
	putLabels(push, "attributes", pc.GetAttributes())
	if tok := pc.GetOidcToken(); tok != nil {
		oidc := map[string]any{"serviceAccountEmail": tok.GetServiceAccountEmail()}
		if a := tok.GetAudience(); a != "" {
			oidc["audience"] = a
		}
		push["oidcToken"] = oidc
	}
	if nw := pc.GetNoWrapper(); nw != nil {
		push["noWrapper"] = map[string]any{"writeMetadata": nw.GetWriteMetadata()}
	}
	return push
}

func storageInputs(cs *pubsubpb.CloudStorageConfig) map[string]any {
	out := map[string]any{"bucket": cs.GetBucket()}
	for k, v := range map[string]string{
		"filenamePrefix":         cs.GetFilenamePrefix(),
		"filenameSuffix":         cs.GetFilenameSuffix(),
		"filenameDatetimeFormat": cs.GetFilenameDatetimeFormat(),
		"serviceAccountEmail":    cs.GetServiceAccountEmail(),
	} {
		if v != "" {
			out[k] = v
		}
	}
	putDuration(out, "maxDuration", cs.GetMaxDuration())
	if n := cs.GetMaxBytes(); n != 0 {
		out["maxBytes"] = n
	}
	if n := cs.GetMaxMessages(); n != 0 {
		out["maxMessages"] = n
	}
	if avro := cs.GetAvroConfig(); avro != nil {
		out["avroConfig"] = map[string]any{"writeMetadata": avro.GetWriteMetadata(), "useTopicSchema": avro.GetUseTopicSchema()}
	}
	return out
}

func transformInputs(ts []*pubsubpb.MessageTransform) []any {
	out := make([]any, 0, len(ts))
	for _, t := range ts {
		m := map[string]any{"disabled": t.GetDisabled()}
		if udf := t.GetJavascriptUdf(); udf != nil {
			m["javascriptUdf"] = map[string]any{"functionName": udf.GetFunctionName(), "code": udf.GetCode()}
		}
		out = append(out, m)
	}
	return out
}

// putLabels sets key to a copy of m when m is not empty.
func putLabels(in map[string]any, key string, m map[string]string) {
	if len(m) == 0 {
		return
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	in[key] = out
}

// putDuration sets key to d in the API's string form when d is set.
func putDuration(in map[string]any, key string, d *durationpb.Duration) {
	if d == nil {
		return
	}
	in[key] = durationString(d)
}

// durationString is a duration as the Pub/Sub REST API and pulumi-gcp write it: seconds
// with up to nine fractional digits and an "s" ("600s", "3.5s"), or "" for none.
func durationString(d *durationpb.Duration) string {
	if d == nil {
		return ""
	}
	secs, nanos := d.GetSeconds(), d.GetNanos()
	if nanos == 0 {
		return fmt.Sprintf("%ds", secs)
	}
	sign := ""
	if secs < 0 || nanos < 0 {
		sign, secs, nanos = "-", -secs, -nanos
	}
	frac := strings.TrimRight(fmt.Sprintf("%09d", nanos), "0")
	return fmt.Sprintf("%s%d.%ss", sign, secs, frac)
}
