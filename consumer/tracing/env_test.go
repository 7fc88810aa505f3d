package tracing_test

import (
	"context"
	"strings"
	"testing"

	"github.com/eventpipe/eventpipe/consumer/tracing"
	"github.com/eventpipe/eventpipe/internal/testing/otlptest"
)

// otelVars are the variables FromEnv reads; each case starts with all unset.
var otelVars = []string{"OTEL_SDK_DISABLED", "OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
	"OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_SERVICE_NAME", "OTEL_RESOURCE_ATTRIBUTES"}

func setEnv(t *testing.T, env map[string]string) {
	t.Helper()
	for _, k := range otelVars {
		t.Setenv(k, env[k])
	}
}

func TestFromEnvTurnsTracingOnOnlyWhenAsked(t *testing.T) {
	cases := []struct {
		name    string
		env     map[string]string
		on      bool
		wantErr string
	}{
		{"nothing set", nil, false, ""},
		{"endpoint", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://localhost:4318"}, true, ""},
		{"traces endpoint, grpc", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://localhost:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, true, ""},
		{"exporter otlp", map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, true, ""},
		{"exporter none", map[string]string{"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://localhost:4318"}, false, ""},
		{"sdk disabled", map[string]string{"OTEL_SDK_DISABLED": "true", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://localhost:4318"}, false, ""},
		{"other exporter", map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"}, false, `OTEL_TRACES_EXPORTER="zipkin"`},
		{"bad protocol", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://localhost:4318", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/json"},
			false, `OTEL_EXPORTER_OTLP_TRACES_PROTOCOL="http/json"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			setEnv(t, tc.env)
			tr, shutdown, err := tracing.FromEnv(t.Context(), tracing.Identity{Service: "svc", Version: "v1"})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), "fix:") {
					t.Fatalf("error %v, want one naming %s and the fix", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tr.Enabled() != tc.on {
				t.Fatalf("tracing on = %v, want %v", tr.Enabled(), tc.on)
			}
			if tc.on {
				if err := shutdown(context.Background()); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// Spans are batched, and Shutdown exports the last ones: what the
// consumer does on SIGTERM.
func TestShutdownExportsBatchedSpans(t *testing.T) {
	recv := otlptest.Start(t)
	setEnv(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": recv.URL, "OTEL_RESOURCE_ATTRIBUTES": "deployment.environment.name=test"})
	tr, shutdown, err := tracing.FromEnv(t.Context(), tracing.Identity{Service: "eventpipe-consumer", Version: "v1"})
	if err != nil {
		t.Fatal(err)
	}
	msg := message("m-1", nil)
	_, span := tr.StartMessage(t.Context(), tracing.IngressPull, msg, nil)
	tracing.Finish(span, "applied", nil)
	if got := recv.Spans(); len(got) != 0 {
		t.Fatalf("spans exported before the batch was due: %v", got)
	}
	if err := shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := recv.Spans(); len(got) != 1 || got[0].Service != "eventpipe-consumer" || got[0].Name != "process sub" {
		t.Fatalf("exported %v, want the one delivery span of service eventpipe-consumer", got)
	}
}
