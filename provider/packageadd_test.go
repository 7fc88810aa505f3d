package provider_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/common/apitype"
	"github.com/pulumi/pulumi/sdk/v3/go/common/workspace"

	"github.com/eventpipe/eventpipe/internal/release"
	"github.com/eventpipe/eventpipe/provider"
)

// packageAddSource is the source the installation docs give `pulumi
// package add`: this repository's plugin folder at a release tag.
const packageAddSource = "github.com/eventpipe/eventpipe/cmd/pulumi-resource-eventpipe@" + release.Tag

// TestPackageAddFindsThePlugin resolves the documented `pulumi package add`
// source and the schema's pluginDownloadURL with Pulumi's own parser
// (workspace.NewPluginSpec, as ProviderFromSource does): both name this
// repository and the plugin folder, and that folder holds the
// PulumiPlugin.yaml (runtime go) the plugin host reads to build the plugin
// from source (plugin.ExecPlugin).
func TestPackageAddFindsThePlugin(t *testing.T) {
	for _, source := range []string{packageAddSource, provider.PluginDownloadURL + "@" + release.Tag} {
		spec, err := workspace.NewPluginSpec(t.Context(), source, apitype.ResourcePlugin, nil, "", nil)
		if err != nil {
			t.Fatalf("%s: %v", source, err)
		}
		if !spec.IsGitPlugin() {
			t.Errorf("%s is not read as a git source: %+v", source, spec)
		}
		if got, want := spec.PluginDownloadURL, "git://github.com/eventpipe/eventpipe/cmd/pulumi-resource-eventpipe"; got != want {
			t.Errorf("%s: download URL %q, want %q", source, got, want)
		}
		if want := strings.TrimPrefix(release.Tag, "v"); spec.Version == nil || spec.Version.String() != want {
			t.Errorf("%s: version %v, want %s", source, spec.Version, want)
		}
		sub := spec.SubDir()
		if sub != "cmd/pulumi-resource-eventpipe" {
			t.Fatalf("%s: plugin folder %q, want cmd/pulumi-resource-eventpipe", source, sub)
		}
		proj, err := workspace.LoadPluginProject(filepath.Join("..", filepath.FromSlash(sub), "PulumiPlugin.yaml"))
		if err != nil {
			t.Fatalf("the plugin folder %s: %v", sub, err)
		}
		if proj.Runtime.Name() != "go" {
			t.Errorf("PulumiPlugin.yaml runtime %q, want go", proj.Runtime.Name())
		}
	}
	doc, err := os.ReadFile(filepath.Join("..", "docs", "provider-installation.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), "pulumi package add "+packageAddSource) {
		t.Errorf("docs/provider-installation.md does not show `pulumi package add %s`", packageAddSource)
	}
}

// TestInstallationDocSaysWhatTheCLIWrites: the SDK folder and the version a build without
// VCS stamping records are the ones the Pulumi CLI (v3.224.0) writes: the folder is
// sdks/<namespace>-<name> (packages.InstallPackage), and the package declaration names
// provider.DevVersion and the plugin's download URL.
func TestInstallationDocSaysWhatTheCLIWrites(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "docs", "provider-installation.md"))
	if err != nil {
		t.Fatal(err)
	}
	folder := "sdks/" + provider.Namespace + "-" + provider.Name
	for _, want := range []string{
		"`" + folder + "`",
		folder + "/" + provider.Name + "-" + provider.DevVersion + ".yaml",
		"name: " + provider.Name + "\nversion: " + provider.DevVersion + "\ndownloadUrl: " + provider.PluginDownloadURL + "\n",
		"reports `" + provider.DevVersion + "`",
		"v3.214.1 or newer",
		// the Pulumi.yaml entry v3.224.0 records for a built binary (packagecmd, package_add.go)
		"packages:\n  " + provider.Name + ":\n    source: " + provider.Name + "\n    version: " + provider.DevVersion + "\n",
	} {
		if !strings.Contains(string(doc), want) {
			t.Errorf("docs/provider-installation.md lacks %q", want)
		}
	}
	if strings.Contains(string(doc), "`sdks/"+provider.Name+"`") {
		t.Errorf("docs/provider-installation.md still names the SDK folder sdks/%s", provider.Name)
	}
}
