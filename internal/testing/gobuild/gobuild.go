// Package gobuild builds the Go commands tests run as processes (plugins for the Pulumi
// engine, the consumer, the eventpipe CLI), with the link flags every such build shares.
// It imports the standard library only, so a test binary that builds commands links
// nothing more for it.
package gobuild

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// LinkFlags are the link flags of the commands tests build to run as processes: no symbol
// table and no DWARF. The DWARF is most of a link's work (the stand-in gcp plugin: 6.2 s of
// CPU with it, 3.9 s without; docs/benchmarks.md, issue 38) and no test reads it: stack
// traces and panics use the runtime's own tables, which -s keeps. Link flags are not part
// of a compiled package's cache key, so the packages compiled for the tests are reused.
const LinkFlags = "-s -w"

// Build builds the main packages pkgs (as go build takes them in dir; the current
// directory when dir is empty) into the folder out with the default build settings and
// LinkFlags, in one go build: the package graph is loaded once and the links run side by
// side. Each command is out/NAME, NAME the last element of its package's path.
func Build(ctx context.Context, dir, out string, pkgs ...string) error {
	if err := os.MkdirAll(out, 0o755); err != nil {
		return fmt.Errorf("gobuild: %w", err)
	}
	args := append([]string{"build", "-ldflags=" + LinkFlags, "-o", out + string(os.PathSeparator)}, pkgs...)
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s: %w\n%s", strings.Join(pkgs, " "), err, b)
	}
	return nil
}
