package spec

import "strings"

// Label keys eventpipe puts on resources; the policy checker and alerts rely on them.
const (
	LabelPipeline        = "eventpipe_pipeline"
	LabelEnv             = "eventpipe_env"
	LabelRole            = "eventpipe_role"
	LabelDLQOptOut       = "eventpipe_dlq_opt_out"
	LabelDLQOptOutReason = "eventpipe_dlq_opt_out_reason"
)

// Values of LabelRole.
const (
	RoleSource   = "source"
	RoleDLQ      = "dlq"
	RoleConsumer = "consumer"
)

// NormaliseLabelValue turns free text into a GCP label value: lowercase, every
// run of characters outside [a-z0-9_-] becomes one "-", trimmed of "-", at
// most 63 characters.
func NormaliseLabelValue(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') || r == '_' || r == '-' {
			b.WriteRune(r)
			dash = false
			continue
		}
		if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
		}
	}
	out := strings.Trim(b.String(), "-")
	if len(out) > 63 {
		out = strings.TrimRight(out[:63], "-")
	}
	return out
}

// Labels returns the labels of a resource of pipeline p with role.
func (s *Stack) Labels(p *Pipeline, role string) map[string]string {
	out := make(map[string]string, len(p.Labels)+3)
	for k, v := range p.Labels {
		out[k] = v
	}
	out[LabelPipeline] = NormaliseLabelValue(p.Name)
	out[LabelEnv] = s.Env
	out[LabelRole] = role
	return out
}

// SubscriptionLabels adds the DLQ opt-out labels to a source subscription's labels.
func (s *Stack) SubscriptionLabels(p *Pipeline, sub *Subscription) map[string]string {
	out := s.Labels(p, RoleSource)
	if !sub.HasDLQ() {
		out[LabelDLQOptOut] = "true"
		out[LabelDLQOptOutReason] = NormaliseLabelValue(sub.DeadLetter.Reason)
	}
	return out
}
