package provider

import "testing"

// TestVersionOf: a binary built from a tagged checkout reports the tag, one
// built from an untagged commit its pseudo-version, and one without module
// version information the development version: always a semantic version
// the engine accepts.
func TestVersionOf(t *testing.T) {
	cases := []struct{ module, want string }{
		{"v1.4.0", "1.4.0"},
		{"v1.5.0-rc.1", "1.5.0-rc.1"},
		{"v0.0.0-20261124192301-7d00d8f12345", "0.0.0-20261124192301-7d00d8f12345"},
		{"v0.0.0-20261124192301-7d00d8f12345+dirty", "0.0.0-20261124192301-7d00d8f12345+dirty"},
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
