package analyzer

import (
	"log/slog"
	"reflect"
	"strings"
	"testing"
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
