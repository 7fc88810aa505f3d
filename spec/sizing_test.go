package spec_test

import (
	"strings"
	"testing"

	"github.com/eventpipe/eventpipe/consumer/limits"
	"github.com/eventpipe/eventpipe/spec"
)

// pushOnlyConfig is baseConfig without the pull subscription, so CPU below
// 1 is possible.
func pushOnlyConfig() map[string]any {
	cfg := baseConfig()
	set(cfg, "eventpipe:pipelines", "orders.subscriptions.work", remove)
	return cfg
}

// TestCloudRunSizes checks CPU, memory, concurrency and execution
// environment together with Cloud Run's rules: every size the API rejects
// is a config error on the key to change, with the allowed values and a fix.
func TestCloudRunSizes(t *testing.T) {
	const cons = "eventpipe:pipelines.orders.consumer."
	cases := []struct {
		name     string
		consumer map[string]any
		// wantPath is the key of the only error ("" for a valid size);
		// allowed and fix are parts of its text.
		wantPath, allowed, fix string
	}{
		{"defaults", map[string]any{}, "", "", ""},
		{"whole CPUs", map[string]any{"cpu": "2", "memory": "8Gi"}, "", "", ""},
		{"six CPUs", map[string]any{"cpu": "6", "memory": "4Gi"}, "", "", ""},
		{"eight CPUs at the maximum", map[string]any{"cpu": "8", "memory": "32Gi"}, "", "", ""},
		{"millicores for a whole CPU", map[string]any{"cpu": "2000m", "memory": "1Gi"}, "", "", ""},
		{"gen1 below 512Mi", map[string]any{"memory": "256Mi", "executionEnvironment": "gen1"}, "", "", ""},
		{"fractional CPU done right", map[string]any{"cpu": "0.5", "memory": "1Gi", "concurrency": 1, "executionEnvironment": "gen1"}, "", "", ""},
		{"fractional CPU in millicores", map[string]any{"cpu": "250m", "memory": "512Mi", "concurrency": 1, "executionEnvironment": "gen1"}, "", "", ""},

		{"three CPUs", map[string]any{"cpu": "3", "memory": "2Gi"}, cons + "cpu", "1, 2, 4, 6 or 8", `set cpu to "4"`},
		{"1500m", map[string]any{"cpu": "1500m"}, cons + "cpu", "1, 2, 4, 6 or 8", `set cpu to "2"`},
		{"more than 8 CPUs", map[string]any{"cpu": "16", "memory": "32Gi"}, cons + "cpu", "1, 2, 4, 6 or 8", `set cpu to "8"`},
		{"below the smallest CPU", map[string]any{"cpu": "0.05", "concurrency": 1, "executionEnvironment": "gen1", "memory": "256Mi"}, cons + "cpu", `at least "0.08"`, "raise cpu"},
		{"finer than a thousandth", map[string]any{"cpu": "0.0005"}, cons + "cpu", "a CPU count", "quoted number"},
		{"half a CPU with concurrency 80", map[string]any{"cpu": "0.5", "executionEnvironment": "gen1"}, cons + "concurrency", `1 with cpu "0.5"`, "set concurrency: 1"},
		{"half a CPU in gen2", map[string]any{"cpu": "0.5", "concurrency": 1}, cons + "cpu", "second-generation", "executionEnvironment: gen1"},
		{"half a CPU with 2Gi", map[string]any{"cpu": "0.5", "memory": "2Gi", "concurrency": 1, "executionEnvironment": "gen1"}, cons + "memory", `at most 1Gi with cpu "0.5"`, `set cpu: "1" or more`},
		{"a quarter CPU with 1Gi", map[string]any{"cpu": "0.25", "memory": "1Gi", "concurrency": 1, "executionEnvironment": "gen1"}, cons + "memory", `at most 512Mi with cpu "0.25"`, "lower memory to 512Mi"},
		{"64Mi", map[string]any{"memory": "64Mi", "executionEnvironment": "gen1"}, cons + "memory", "128Mi–32Gi", "raise memory to 128Mi"},
		{"64Gi", map[string]any{"cpu": "8", "memory": "64Gi"}, cons + "memory", "128Mi–32Gi", "lower memory to 32Gi"},
		{"8Gi on one CPU", map[string]any{"memory": "8Gi"}, cons + "memory", `at most 4Gi with cpu "1"`, `set cpu: "2" or more`},
		{"four CPUs with 1Gi", map[string]any{"cpu": "4", "memory": "1Gi"}, cons + "memory", `at least 2Gi with cpu "4"`, "raise memory to 2Gi"},
		{"eight CPUs with 2Gi", map[string]any{"cpu": "8", "memory": "2Gi"}, cons + "memory", `at least 4Gi with cpu "8"`, "raise memory to 4Gi"},
		{"gen2 with 256Mi", map[string]any{"memory": "256Mi"}, cons + "memory", "at least 512Mi in the second-generation", "executionEnvironment: gen1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := pushOnlyConfig()
			for k, v := range tc.consumer {
				set(cfg, "eventpipe:pipelines", "orders.consumer."+k, v)
			}
			_, errs := load(t, cfg)
			if tc.wantPath == "" {
				if errs != nil {
					t.Fatalf("valid size rejected: %v", errs)
				}
				return
			}
			if len(errs) != 1 {
				t.Fatalf("got %d errors, want 1: %v", len(errs), errs)
			}
			e := errs[0]
			if e.Path != tc.wantPath || !strings.Contains(e.Allowed, tc.allowed) || !strings.Contains(e.Fix, tc.fix) {
				t.Errorf("error = %q\nwant path %s allowing %q with fix %q", e.Error(), tc.wantPath, tc.allowed, tc.fix)
			}
		})
	}
}

// TestFractionalCPUCannotPull: a pulling consumer's CPU is always
// allocated, which Cloud Run offers only from 1 CPU.
func TestFractionalCPUCannotPull(t *testing.T) {
	cfg := baseConfig() // has a pull subscription
	for k, v := range map[string]any{"cpu": "0.5", "memory": "512Mi", "concurrency": 1, "executionEnvironment": "gen1"} {
		set(cfg, "eventpipe:pipelines", "orders.consumer."+k, v)
	}
	_, errs := load(t, cfg)
	if len(errs) != 1 || errs[0].Path != "eventpipe:pipelines.orders.consumer.cpu" || !strings.Contains(errs[0].Allowed, "when the consumer pulls") {
		t.Fatalf("errs = %v, want one on consumer.cpu about pulling", errs)
	}
}

// TestRequestConcurrencyFollowsMemory: the service gets the configured
// concurrency, or the lower number of maximum-size messages its memory
// holds (the consumer's own memory model).
func TestRequestConcurrencyFollowsMemory(t *testing.T) {
	cases := []struct {
		memory     string
		maxMessage int
		want       int
	}{
		{"512Mi", limits.MaxMessageBytes, limits.MaxConcurrency(512<<20, limits.MaxMessageBytes, 80)},
		{"256Mi", limits.MaxMessageBytes, limits.MaxConcurrency(256<<20, limits.MaxMessageBytes, 80)},
		{"4Gi", limits.MaxMessageBytes, limits.MaxConcurrency(4<<30, limits.MaxMessageBytes, 80)},
		{"512Mi", 64 << 10, 80},
	}
	for _, tc := range cases {
		cfg := pushOnlyConfig()
		set(cfg, "eventpipe:pipelines", "orders.consumer.memory", tc.memory)
		set(cfg, "eventpipe:pipelines", "orders.consumer.executionEnvironment", "gen1")
		set(cfg, "eventpipe:pipelines", "orders.consumer.maxMessageBytes", tc.maxMessage)
		st, errs := load(t, cfg)
		if errs != nil {
			t.Fatal(errs)
		}
		if got := st.Pipelines["orders"].Consumer.RequestConcurrency(); got != tc.want {
			t.Errorf("%s, %d-byte messages: concurrency %d, want %d", tc.memory, tc.maxMessage, got, tc.want)
		}
	}
	// The sizes that matter: a default instance cannot take 80 maximum-size
	// messages at once.
	if c := limits.MaxConcurrency(512<<20, limits.MaxMessageBytes, 80); c >= 80 || c < 1 {
		t.Fatalf("the memory model lets 512Mi hold %d 10 MB messages; the table above tests nothing", c)
	}
}

func TestParseCPUAndMemory(t *testing.T) {
	for in, want := range map[string]int{"1": 1000, "2": 2000, "0.5": 500, "0.08": 80, "500m": 500, "1000m": 1000, "1.0": 1000, "0.125": 125} {
		if got, ok := spec.ParseCPU(in); !ok || got != want {
			t.Errorf("ParseCPU(%q) = %d, %v; want %d", in, got, ok, want)
		}
	}
	for _, bad := range []string{"", "lots", "0", "-1", "1e3", "+1", "0.0005", "m", "1.5m", "0m", "Inf"} {
		if got, ok := spec.ParseCPU(bad); ok {
			t.Errorf("ParseCPU(%q) = %d, accepted", bad, got)
		}
	}
	for in, want := range map[string]int{"512Mi": 512, "1Gi": 1024, "32Gi": 32768, "64Gi": 65536} {
		if got, ok := spec.ParseMemory(in); !ok || got != want {
			t.Errorf("ParseMemory(%q) = %d, %v; want %d", in, got, ok, want)
		}
	}
	for _, bad := range []string{"", "1GB", "512", "0Mi", "1.5Gi", "99999999999Gi"} {
		if got, ok := spec.ParseMemory(bad); ok {
			t.Errorf("ParseMemory(%q) = %d, accepted", bad, got)
		}
	}
}

// TestPlainStorePasswordIsNeverPrinted: the error about a password in plain
// config does not repeat the password.
func TestPlainStorePasswordIsNeverPrinted(t *testing.T) {
	cfg := baseConfig()
	set(cfg, "eventpipe:store", "", "postgres://app:hunter2@db.internal/eventpipe")
	_, errs := load(t, cfg)
	if len(errs) != 1 || errs[0].Path != "eventpipe:store" {
		t.Fatalf("errs = %v, want one on eventpipe:store", errs)
	}
	if strings.Contains(errs.Error(), "hunter2") {
		t.Errorf("the password is in the error: %v", errs)
	}
}
