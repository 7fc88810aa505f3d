package spec

import (
	"strings"
	"testing"
)

// TestCheckImage: references pinned by tag, digest or both are accepted, whatever the
// case of the registry host; everything else is refused with the reason that applies
// (never "add a tag or digest" for a reference that has one).
func TestCheckImage(t *testing.T) {
	const digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	valid := []string{
		"consumer:1.4.0",
		"consumer@" + digest,
		"consumer:latest@" + digest,
		"europe-west1-docker.pkg.dev/acme-prod/eventpipe/consumer:1.4.0",
		"europe-west1-docker.pkg.dev/acme-prod/eventpipe/consumer:1.4.0@" + digest,
		"EUROPE-WEST1-docker.pkg.dev/acme-prod/eventpipe/consumer:1.4.0",
		"Registry/consumer:1",
		"localhost:5000/consumer:dev",
		"localhost/consumer@" + digest,
		"gcr.io/acme/my_consumer__x-y.z:V1_2.3-rc",
		"r/x:1",
	}
	invalid := []struct{ image, fix string }{
		{"consumer", "add a tag or digest"},
		{"gcr.io/acme/consumer", "add a tag or digest"},
		{"localhost:5000/consumer", "add a tag or digest"},
		{"consumer@sha256:abc", "is not sha256:"},
		{"consumer:1@" + strings.ToUpper(digest), "is not sha256:"},
		{"consumer:-bad", "the tag"},
		{"consumer:" + strings.Repeat("a", 129), "the tag"},
		{"gcr.io/Acme/consumer:1", "must be lower case"},
		{"gcr.io/acme/consumer-:1", "must be lower case"},
		{"gcr.io//consumer:1", "must be lower case"},
		{"-gcr.io/acme/consumer:1", "not a host name"},
		{"gcr.io:port/acme/consumer:1", "not a number"},
	}
	for _, image := range valid {
		if e := CheckImage(image); e != nil {
			t.Errorf("%s refused: %s", image, e.Fix)
		}
	}
	for _, tc := range invalid {
		e := CheckImage(tc.image)
		if e == nil {
			t.Errorf("%s accepted", tc.image)
			continue
		}
		if !strings.Contains(e.Fix, tc.fix) {
			t.Errorf("%s: fix %q, want it to say %q", tc.image, e.Fix, tc.fix)
		}
	}
}

// FuzzCheckImage: any accepted reference has a tag or a digest, so the consumer reports
// a version (EVENTPIPE_VERSION).
func FuzzCheckImage(f *testing.F) {
	for _, s := range []string{"consumer:1", "gcr.io/a/b@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", "A.B/c:d", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, image string) {
		if CheckImage(image) == nil && ImageVersion(image) == "" {
			t.Errorf("%q accepted without a tag or digest", image)
		}
	})
}
