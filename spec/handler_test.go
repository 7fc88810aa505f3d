package spec_test

import (
	"strings"
	"testing"
)

// TestHandlerValidation: a consumer's handler gets its defaults, and each
// bad value is one error naming its path, with a fix.
func TestHandlerValidation(t *testing.T) {
	const pl, h = "eventpipe:pipelines", "orders.consumer.handler"
	image := map[string]any{"image": "europe-docker.pkg.dev/acme/orders/handler:1"}
	cfg := baseConfig()
	set(cfg, pl, h, image)
	st, errs := load(t, cfg)
	if errs != nil {
		t.Fatal(errs)
	}
	got := st.Pipelines["orders"].Consumer.Handler
	if *got.Port != 8081 || got.HealthPath != "/healthz" || got.CPU != "1" || got.Memory != "512Mi" || got.URL() != "http://localhost:8081" {
		t.Fatalf("defaults: %+v", got)
	}
	for _, tc := range []struct {
		path        string
		value       any
		wantAllowed string
	}{
		{"image", remove, "by digest"},
		{"port", 8080, "other than 8080"},
		{"port", 70000, "1 to 65535"},
		{"healthPath", "ready", "starting with /"},
		{"env.EVENTPIPE_STORE", "x", "not starting with EVENTPIPE_"},
		{"env.PORT", "1", "not PORT"},
		{"env.1X", "1", "letters, digits"},
		{"cpu", "lots", "CPU count"},
		{"memory", "1GB", "Mi or Gi"},
	} {
		cfg := baseConfig()
		set(cfg, pl, h, map[string]any{"image": image["image"]})
		set(cfg, pl, h+"."+tc.path, tc.value)
		_, errs := load(t, cfg)
		want := pl + "." + h + "." + tc.path
		if len(errs) != 1 || errs[0].Path != want || !strings.Contains(errs[0].Allowed, tc.wantAllowed) || errs[0].Fix == "" {
			t.Errorf("%s = %v: errors %v, want one at %s allowing %q", tc.path, tc.value, errs, want, tc.wantAllowed)
		}
	}
}
