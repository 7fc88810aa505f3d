package check

import (
	"slices"
	"strings"
	"testing"

	"github.com/eventpipe/eventpipe/internal/spelling"
	"github.com/eventpipe/eventpipe/internal/testing/ruletest"
	"github.com/eventpipe/eventpipe/policies/checkconfig"
)

// misspellings are the names one edit away from name (a letter left out, doubled,
// changed or two swapped), over the letters of names.
func misspellings(name string) []string {
	var out []string
	for i := range len(name) {
		out = append(out, name[:i]+name[i+1:], name[:i+1]+name[i:])
		if i+1 < len(name) {
			out = append(out, name[:i]+name[i+1:i+2]+name[i:i+1]+name[i+2:])
		}
		for _, c := range "aeioprdstgnvx" {
			out = append(out, name[:i]+string(c)+name[i+1:])
		}
	}
	return out
}

// TestEnvironmentProfiles: with the default rules and with a check configuration that
// names more environments, every environment named by the rules or the configuration is
// known and judged by its profile; every one-edit misspelling of one that names no
// environment itself is refused when given by --env, naming the flag, the known
// environments and a did-you-mean (the walk-through's "prodd" silently dropped prod's
// strict rules); and any other name is a new environment with the default profile, which
// the verdict says, as is every name a stack gives.
func TestEnvironmentProfiles(t *testing.T) {
	rules := ruletest.Engine(t, nil).Rules()
	cfg, err := checkconfig.Parse([]byte(`
thresholds:
  deny_subscription_removed: {environments: [prod, preprod]}
environments:
  staging:
    thresholds:
      deny_subscription_expires: {enforce: true}
`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		cfg   *checkconfig.Config
		known []string
	}{
		{"default rules", nil, []string{"prod"}},
		{"configured", cfg, []string{"preprod", "prod", "staging"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			known := KnownEnvironments(tc.cfg, rules)
			if !slices.Equal(known, tc.known) {
				t.Fatalf("known environments %v, want %v", known, tc.known)
			}
			for _, env := range known {
				p, err := profile(env, true, tc.cfg, tc.cfg.Data(env), rules)
				if err != nil || !p.Known || len(p.Strict) == 0 {
					t.Errorf("%s: %+v, %v", env, p, err)
				}
				for _, typo := range misspellings(env) {
					if slices.Contains(known, typo) {
						continue
					}
					_, err := profile(typo, true, tc.cfg, tc.cfg.Data(typo), rules)
					meant, _ := spelling.Closest(typo, known)
					if err == nil || !strings.Contains(err.Error(), `--env "`+typo+`"`) || !strings.Contains(err.Error(), "(they name "+strings.Join(known, ", ")+")") ||
						!strings.Contains(err.Error(), `did you mean "`+meant+`"?`) {
						t.Errorf("--env %q (a misspelt %s): %v", typo, env, err)
					}
					// A stack's name is a real environment, however near a known one.
					if p, err := profile(typo, false, tc.cfg, tc.cfg.Data(typo), rules); err != nil || p.Known || !strings.Contains(p.String(), "the default profile") {
						t.Errorf("stack %q: %v, %v", typo, p, err)
					}
				}
			}
			for _, env := range []string{"qa", "dev", "production", "perf-eu-1", "perf", "prodeu1"} {
				if _, near := misspelt(env, known); near {
					t.Fatalf("%q is taken for a misspelling of a known environment", env)
				}
				p, err := profile(env, true, tc.cfg, tc.cfg.Data(env), rules)
				if err != nil || p.Known || !strings.Contains(p.String(), env+": the default profile") || len(p.Mandatory) != 0 {
					t.Errorf("new environment %q: %v, %v", env, p, err)
				}
			}
		})
	}
	// The profile says which strict rules deny: prod's defaults, staging's enforce.
	prod, _ := profile("prod", true, cfg, cfg.Data("prod"), rules)
	staging, _ := profile("staging", true, cfg, cfg.Data("staging"), rules)
	if len(prod.Mandatory) != len(prod.Strict) || len(staging.Mandatory) != 1 || !staging.Configured || !strings.Contains(staging.String(), "its check configuration thresholds") {
		t.Errorf("prod %v\nstaging %v", prod, staging)
	}
}
