package spec_test

import (
	"strings"
	"testing"

	"github.com/eventpipe/eventpipe/spec"
)

func TestNormaliseLabelValue(t *testing.T) {
	cases := []struct{ in, want string }{
		{"Replays come from the warehouse", "replays-come-from-the-warehouse"},
		{"  --Legacy: consumer v1!  ", "legacy-consumer-v1"},
		{"snake_case-ok", "snake_case-ok"},
		{"ÜBER straße", "ber-stra-e"},
		{"", ""},
		{"!!!", ""},
		{strings.Repeat("a", 70), strings.Repeat("a", 63)},
		{strings.Repeat("a", 62) + " b", strings.Repeat("a", 62)},
	}
	for _, tc := range cases {
		if got := spec.NormaliseLabelValue(tc.in); got != tc.want {
			t.Errorf("NormaliseLabelValue(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestPushAccountIDFitsGCPLimits(t *testing.T) {
	cases := []struct{ pipeline, key string }{
		{"ab", "c"},
		{"orders", "main"},
		{"system-events", "materializer"},
		{strings.Repeat("p", 25), strings.Repeat("s", 30)},
		{"a" + strings.Repeat("-b", 12), "x-y-z"},
	}
	seen := map[string]bool{}
	for _, tc := range cases {
		p := &spec.Pipeline{Name: tc.pipeline}
		id := p.PushAccountID(&spec.Subscription{Key: tc.key})
		if len(id) < 6 || len(id) > 30 || strings.HasSuffix(id, "-") || strings.Contains(id, "--") && !strings.Contains(tc.pipeline+tc.key, "--") {
			t.Errorf("PushAccountID(%s, %s) = %q: not a valid account id", tc.pipeline, tc.key, id)
		}
		if seen[id] {
			t.Errorf("PushAccountID(%s, %s) = %q collides", tc.pipeline, tc.key, id)
		}
		seen[id] = true
	}
	p := &spec.Pipeline{Name: "orders"}
	if got := p.PushAccountID(&spec.Subscription{Key: "main"}); got != "orders-main-push" {
		t.Errorf("short ids stay readable: %q", got)
	}
}
