package analyzer

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strconv"
	"strings"

	"google.golang.org/grpc"

	"github.com/pulumi/pulumi/sdk/v3/go/common/util/rpcutil"
	"github.com/pulumi/pulumi/sdk/v3/go/common/workspace"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"

	"github.com/eventpipe/eventpipe/internal/release"
)

// Args are the plugin's command line as Pulumi builds it (see the package comment).
type Args struct {
	// EngineAddress is the Pulumi engine's gRPC address.
	EngineAddress string
	// PackDir is the policy pack folder.
	PackDir string
	// Verbosity is -v=N: 0 logs warnings and errors only (Pulumi shows the plugin's
	// stderr to the user), 1 and up every analysis, 9 and up every resource.
	Verbosity int
}

// ParseArgs reads `[--logtostderr] [-v=N] [--tracing ENDPOINT] ENGINE_ADDRESS PACK_DIR
// [-OPTION=VALUE...]`. The pack takes no runtime options: one in PulumiPolicy.yaml is a
// mistake worth stopping for. Flags Pulumi may add later are ignored.
func ParseArgs(args []string) (Args, []string, error) {
	var a Args
	var positional, ignored []string
	for i := 0; i < len(args); i++ {
		arg := args[i]
		if len(positional) == 2 {
			return a, nil, fmt.Errorf("runtime option %q: the eventpipe policy pack takes none; remove runtime options from PulumiPolicy.yaml", arg)
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(arg, "-"), "=")
		switch {
		case !strings.HasPrefix(arg, "-"):
			positional = append(positional, arg)
		case name == "v":
			if !hasValue && i+1 < len(args) {
				i++
				value = args[i]
			}
			n, err := strconv.Atoi(value)
			if err != nil {
				return a, nil, fmt.Errorf("-v %q: want a number", value)
			}
			a.Verbosity = n
		case name == "tracing":
			if !hasValue {
				i++ // the endpoint; eventpipe sends no traces
			}
			ignored = append(ignored, arg)
		default:
			ignored = append(ignored, arg) // --logtostderr: logs go to stderr anyway
		}
	}
	if len(positional) < 2 {
		return a, nil, fmt.Errorf("usage: pulumi-analyzer-policy-eventpipe ENGINE_ADDRESS POLICY_PACK_DIR; Pulumi starts this plugin for `pulumi preview --policy-pack DIR` when DIR/PulumiPolicy.yaml says runtime: eventpipe")
	}
	a.EngineAddress, a.PackDir = positional[0], positional[1]
	return a, ignored, nil
}

// logLevel is the log level of a verbosity.
func logLevel(verbosity int) slog.Level {
	switch {
	case verbosity >= 9:
		return slog.LevelDebug
	case verbosity >= 1:
		return slog.LevelInfo
	}
	return slog.LevelWarn
}

// Main runs the plugin: it loads the policy pack, serves Pulumi's Analyzer service on a
// loopback port, writes the port and a newline to stdout as Pulumi's plugin protocol
// requires, and serves until ctx ends.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	a, ignored, err := ParseArgs(args)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: logLevel(a.Verbosity)}))
	if len(ignored) > 0 {
		log.Debug("flags ignored", slog.Any("flags", ignored))
	}
	dir, err := filepath.Abs(a.PackDir)
	if err != nil {
		return fmt.Errorf("policy pack folder %s: %w", a.PackDir, err)
	}
	// Pulumi's own loader, so the plugin reads PulumiPolicy.yaml as the CLI does.
	proj, err := workspace.LoadPolicyPack(filepath.Join(dir, "PulumiPolicy.yaml"))
	if err != nil {
		return fmt.Errorf("policy pack %s: %w", dir, err)
	}
	pack := Pack{Dir: dir, Version: proj.Version, PluginVersion: buildVersion()}
	if proj.Description != nil {
		pack.Description = *proj.Description
	}
	srv, err := NewServer(ctx, pack, log)
	if err != nil {
		return err
	}
	stop := make(chan bool)
	handle, err := rpcutil.ServeWithOptions(rpcutil.ServeOptions{
		Init: func(s *grpc.Server) error {
			pulumirpc.RegisterAnalyzerServer(s, srv)
			return nil
		},
		Cancel: stop,
	})
	if err != nil {
		return fmt.Errorf("serving Pulumi's analyzer service: %w", err)
	}
	if _, err := fmt.Fprintf(stdout, "%d\n", handle.Port); err != nil {
		return fmt.Errorf("writing the port for Pulumi: %w", err)
	}
	log.Info("serving", slog.Int("port", handle.Port), slog.String("engine", a.EngineAddress))
	select {
	case err := <-handle.Done:
		return err
	case <-ctx.Done():
		close(stop)
		return <-handle.Done
	}
}

// buildVersion is the module version the plugin was built from, "0.0.0-dev" for a build
// from a checkout (Pulumi parses the version as semver).
func buildVersion() string {
	if v := release.ModuleVersion(); strings.HasPrefix(v, "v") {
		return v
	}
	return "0.0.0-dev"
}
