package analyzer

import (
	"log/slog"
	"reflect"
	"strings"
	"testing"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
)

// TestParseArgs reads the command lines Pulumi's plugin host builds (ExecPlugin puts the
// logging and tracing flags before ENGINE_ADDRESS and the pack folder, and runtime options
// after them).
func TestParseArgs(t *testing.T) {
	for _, tt := range []struct {
		name    string
		args    []string
		want    Args
		wantErr string
	}{
		{name: "plain", args: []string{"127.0.0.1:5000", "."}, want: Args{EngineAddress: "127.0.0.1:5000", PackDir: "."}},
		{name: "logging and tracing", args: []string{"--logtostderr", "-v=9", "--tracing", "http://trace", "127.0.0.1:5000", "."},
			want: Args{EngineAddress: "127.0.0.1:5000", PackDir: ".", Verbosity: 9}},
		{name: "flag Pulumi may add later", args: []string{"--color=never", "127.0.0.1:5000", "/p"}, want: Args{EngineAddress: "127.0.0.1:5000", PackDir: "/p"}},
		{name: "runtime option", args: []string{"127.0.0.1:5000", ".", "-strict=true"}, wantErr: `runtime option "-strict=true"`},
		{name: "missing pack folder", args: []string{"127.0.0.1:5000"}, wantErr: "usage: pulumi-analyzer-policy-eventpipe ENGINE_ADDRESS POLICY_PACK_DIR"},
		{name: "bad verbosity", args: []string{"-v=x", "a", "b"}, wantErr: `-v "x"`},
	} {
		got, _, err := ParseArgs(tt.args)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%s: err %v, want %q", tt.name, err, tt.wantErr)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: %+v, %v; want %+v", tt.name, got, err, tt.want)
		}
	}
	if logLevel(0) != slog.LevelWarn || logLevel(1) != slog.LevelInfo || logLevel(9) != slog.LevelDebug {
		t.Error("verbosity does not map to log levels")
	}
}

// TestSeverity: each severity a rule may declare maps to Pulumi's of that name, and info
// (which Pulumi lacks) to unspecified.
func TestSeverity(t *testing.T) {
	for s, want := range map[string]pulumirpc.PolicySeverity{
		"critical": pulumirpc.PolicySeverity_POLICY_SEVERITY_CRITICAL,
		"high":     pulumirpc.PolicySeverity_POLICY_SEVERITY_HIGH,
		"medium":   pulumirpc.PolicySeverity_POLICY_SEVERITY_MEDIUM,
		"low":      pulumirpc.PolicySeverity_POLICY_SEVERITY_LOW,
		"info":     pulumirpc.PolicySeverity_POLICY_SEVERITY_UNSPECIFIED,
		"":         pulumirpc.PolicySeverity_POLICY_SEVERITY_UNSPECIFIED,
	} {
		if got := severity(s); got != want {
			t.Errorf("severity(%q) = %v, want %v", s, got, want)
		}
	}
}
