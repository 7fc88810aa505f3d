package provider

import (
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/common/apitype"
	"github.com/pulumi/pulumi/sdk/v3/go/common/workspace"

	"github.com/eventpipe/eventpipe/internal/release"
)

// TestVersionOf: a binary built from a release tag reports the tag, one
// built from another commit the commit as the Pulumi CLI names a plugin
// fetched from git at a commit (0.0.0-x<hash>), and one without module
// version information the development version.
func TestVersionOf(t *testing.T) {
	cases := []struct{ module, want string }{
		{"v1.4.0", "1.4.0"},
		{"v1.5.0-rc.1", "1.5.0-rc.1"},
		{"v1.4.0+dirty", "1.4.0+dirty"},
		{"v0.0.0-20261124192301-7d00d8f12345", "0.0.0-x7d00d8f12345"},
		{"v1.4.1-0.20261124192301-7d00d8f12345", "0.0.0-x7d00d8f12345"},
		{"v0.0.0-20261124192301-7d00d8f12345+dirty", "0.0.0-x7d00d8f12345"},
		{"(devel)", DevVersion},
		{"", DevVersion},
		{"main", DevVersion},
	}
	for _, c := range cases {
		if got := versionOf(c.module); got != c.want {
			t.Errorf("versionOf(%q) = %q, want %q", c.module, got, c.want)
		}
	}
}

// TestCommitVersionFetchesTheCommit: the version reported for a commit is
// the one Pulumi's own parser gives the source pinned to that commit, so an
// SDK recording it fetches the same commit again.
func TestCommitVersionFetchesTheCommit(t *testing.T) {
	spec, err := workspace.NewPluginSpec(t.Context(), "github.com/eventpipe/eventpipe/cmd/pulumi-resource-eventpipe@7d00d8f12345",
		apitype.ResourcePlugin, nil, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := versionOf("v0.0.0-20261124192301-7d00d8f12345"); spec.Version == nil || spec.Version.String() != got {
		t.Errorf("Pulumi names the commit %v, the plugin reports %s", spec.Version, got)
	}
}

// TestReleaseTagVersion: a plugin built at the release tag the docs install
// (internal/release.Tag) reports the version Pulumi's parser reads from the
// documented `pulumi package add …@TAG` source.
func TestReleaseTagVersion(t *testing.T) {
	spec, err := workspace.NewPluginSpec(t.Context(), PluginDownloadURL+"@"+release.Tag, apitype.ResourcePlugin, nil, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := versionOf(release.Tag); spec.Version == nil || spec.Version.String() != got {
		t.Errorf("Pulumi names %s %v, the plugin built there reports %s", release.Tag, spec.Version, got)
	}
}
