package release

import (
	"runtime/debug"
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
