package release

import (
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"

	"golang.org/x/mod/semver"
)

func TestModuleVersion(t *testing.T) {
	tests := []struct {
		name string
		info debug.BuildInfo
		want string
	}{
		{"tagged", debug.BuildInfo{Main: debug.Module{Version: Tag}}, Tag},
		{"pseudo", debug.BuildInfo{Main: debug.Module{Version: "v1.0.1-0.20261127120000-abcdef123456"}}, "v1.0.1-0.20261127120000-abcdef123456"},
		{"go run", debug.BuildInfo{Main: debug.Module{Version: Devel}}, Devel},
		{"empty", debug.BuildInfo{}, Devel},
		{"checkout", debug.BuildInfo{Main: debug.Module{Version: Devel}, Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "1a2b3c4d5e6f7a8b"}}}, "(devel) 1a2b3c4d5e6f"},
		{"dirty", debug.BuildInfo{Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "1a2b3c"}, {Key: "vcs.modified", Value: "true"}}}, "(devel) 1a2b3c+dirty"},
	}
	for _, tc := range tests {
		if got := moduleVersion(&tc.info); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestTagIsARelease: the tag is a canonical semantic version without a
// pre-release or build suffix, so Go and Pulumi both resolve it.
func TestTagIsARelease(t *testing.T) {
	if !semver.IsValid(Tag) || semver.Canonical(Tag) != Tag || semver.Prerelease(Tag) != "" {
		t.Errorf("release.Tag %q is not a canonical release version vMAJOR.MINOR.PATCH", Tag)
	}
}

// TestChangelogNamesTheTag: CHANGELOG.md's newest section ("## X.Y.Z", newest first) is
// release.Tag's, and its versions go down, so a release that bumps the tag adds its
// section on top.
func TestChangelogNamesTheTag(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "CHANGELOG.md"))
	if err != nil {
		t.Fatal(err)
	}
	var versions []string
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "## "); ok {
			versions = append(versions, "v"+strings.TrimSpace(v))
		}
	}
	if len(versions) == 0 || versions[0] != Tag {
		t.Fatalf("CHANGELOG.md's sections %v: the newest must be release.Tag %s (add its section on top)", versions, Tag)
	}
	for i, v := range versions {
		if !semver.IsValid(v) || i > 0 && semver.Compare(versions[i-1], v) <= 0 {
			t.Errorf("CHANGELOG.md's section %s: want versions vMAJOR.MINOR.PATCH, newest first (%v)", v, versions)
		}
	}
}
