package spec

import (
	"fmt"
	"regexp"
	"strconv"
	"time"
)

// firestoreLocation is a Firestore location id: a region or a multi-region.
var firestoreLocation = regexp.MustCompile(`^([a-z]+-[a-z]+[0-9]+|[a-z]{3}[0-9])$`)

// KeySetup holds what a project needs before its pipelines (see Setup).
const KeySetup = "setup"

// The waits a first deployment puts between enabling an API or granting a role and
// what needs it, because neither takes effect at once and the gcp provider does not
// retry the 403 a too-early call gets: an enablement propagates in "a few minutes"
// (the SERVICE_DISABLED error's own words), a grant "typically [in] 2 minutes"
// (cloud.google.com/iam/docs/access-change-propagation). Each wait is a time_sleep,
// created once: a later `up` waits again only for a new API or grant.
const (
	DefaultAPIPropagation   = 60 * time.Second
	DefaultGrantPropagation = 120 * time.Second
	// MaxPropagation bounds both waits.
	MaxPropagation = time.Hour
)

// Setup configures what a project needs before its pipelines can run: the waits for
// API enablement and IAM grants to take effect, and the Firestore database, which a
// stack creates when FirestoreLocation is set.
type Setup struct {
	// APIPropagation is how long resources wait after their API is enabled, for the enablement to reach every
	// Google Cloud system (default 60s; 0s: no wait, for APIs enabled well before).
	APIPropagation string `json:"apiPropagation,omitempty" pulumi:"apiPropagation,optional"`
	// GrantPropagation is how long a consumer's service waits after the roles its account and service agent
	// are granted, for the grants to take effect (default 120s; 0s: no wait).
	GrantPropagation string `json:"grantPropagation,omitempty" pulumi:"grantPropagation,optional"`
	// FirestoreLocation creates the Firestore databases the stack's Firestore stores name in its project, in
	// this location (a region such as europe-west1, or a multi-region: eur3, nam5); unset, they must exist
	// before the first `pulumi up`.
	FirestoreLocation string `json:"firestoreLocation,omitempty" pulumi:"firestoreLocation,optional"`
}

// Waits returns the setup's API and grant propagation waits, defaults filled in.
// Setup must be valid.
func (s Setup) Waits() (apis, grants time.Duration) {
	apis, grants = DefaultAPIPropagation, DefaultGrantPropagation
	if d, err := ParseDuration(s.APIPropagation); err == nil {
		apis = d
	}
	if d, err := ParseDuration(s.GrantPropagation); err == nil {
		grants = d
	}
	return apis, grants
}

// ValidateSetup checks s, its paths under path (eventpipe:setup in a stack file).
func ValidateSetup(path string, s *Setup) Errors {
	c := &collector{}
	validateSetup(c, path, s)
	return c.errors()
}

func validateSetup(c *collector, path string, s *Setup) {
	for _, f := range []struct {
		key string
		v   *string
		def time.Duration
	}{{"apiPropagation", &s.APIPropagation, DefaultAPIPropagation}, {"grantPropagation", &s.GrantPropagation, DefaultGrantPropagation}} {
		if *f.v == "" {
			*f.v = FormatDuration(f.def)
			continue
		}
		allowed := "a duration from 0s to " + FormatDuration(MaxPropagation) + " in whole seconds, written like 0s, 90s or 2m"
		switch d, err := ParseDuration(*f.v); {
		case err != nil:
			c.add("", path+"."+f.key, strconv.Quote(*f.v), allowed, err.Error()+"; add a unit (s or m)")
		case d < 0 || d > MaxPropagation || d%time.Second != 0:
			c.add("", path+"."+f.key, strconv.Quote(*f.v), allowed,
				fmt.Sprintf("set a wait from 0s to %s, or remove the key for the default %s", FormatDuration(MaxPropagation), FormatDuration(f.def)))
		}
	}
	if l := s.FirestoreLocation; l != "" && !firestoreLocation.MatchString(l) {
		c.add("", path+".firestoreLocation", strconv.Quote(l), "a Firestore location: a region (europe-west1) or a multi-region (eur3, nam5)",
			"write the location in lowercase, as `gcloud firestore locations list` shows it")
	}
}
