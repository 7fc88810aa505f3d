// Package release names eventpipe's versions: the release tag the docs install
// from, and the module version a binary was built from.
package release

import (
	"runtime/debug"
	"strings"
)

// Tag is the newest release tag of the module. The docs' install commands
// (`pulumi package add …@Tag`, `go get …@Tag`) name it, and a test holds them
// to it: bump it together with tagging the release commit.
const Tag = "v1.1.0"

// Devel is the version of a build that carries no module version: go run,
// or go build outside a Git checkout.
const Devel = "(devel)"

// ModuleVersion is the eventpipe module version the running binary was built
// from: the tag for `go install github.com/eventpipe/eventpipe/cmd/…@v1.1.0`
// or a build at a tagged commit, a pseudo-version at another commit, else
// Devel with the commit when Go stamped one ("(devel) 1a2b3c4d5e6f+dirty").
func ModuleVersion() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return Devel
	}
	return moduleVersion(info)
}

func moduleVersion(info *debug.BuildInfo) string {
	if v := info.Main.Version; v != "" && v != Devel {
		return v
	}
	var rev string
	dirty := false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return Devel
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if dirty {
		rev += "+dirty"
	}
	return strings.Join([]string{Devel, rev}, " ")
}
