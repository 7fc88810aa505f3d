package check

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/eventpipe/eventpipe/internal/spelling"
	"github.com/eventpipe/eventpipe/policies/checkconfig"
	"github.com/eventpipe/eventpipe/policies/evaluate"
)

// Environment names are open-ended: a stack's environment is its eventpipe_env label,
// any label value (spec). The rules single out the environments their settings name —
// the strict rules' `environments` (default ["prod"]) — and a check configuration those
// under its `environments:`; every other environment gets the default profile: the
// thresholds for every environment, strict rules advisory. So an environment no rule and
// no configuration names is a new one (judged by the default profile, which the verdict
// says) unless it is a misspelling of a known one ("prodd"), which would silently drop
// that environment's rules: it is refused.

// Profile is how the rules judge one environment.
type Profile struct {
	// Env is the environment ("" when each resource's eventpipe_env label decides).
	Env string
	// Known is whether a rule's settings or the check configuration name Env.
	Known bool
	// Mandatory are the ids of the strict rules that deny in Env; Strict those of every
	// strict rule.
	Mandatory, Strict []string
	// StrictIn are the environments the strict rules are mandatory in, as configured.
	StrictIn []string
	// Configured is whether the check configuration has thresholds for Env.
	Configured bool
}

// String is the profile as the verdict states it.
func (p Profile) String() string {
	if p.Env == "" {
		return "from each resource's eventpipe_env label (no --env)"
	}
	var b strings.Builder
	b.WriteString(p.Env)
	switch {
	case !p.Known:
		b.WriteString(": the default profile (no rule or check configuration names this environment): the thresholds for every environment")
	case p.Configured:
		b.WriteString(": its check configuration thresholds")
	default:
		b.WriteString(": the thresholds for every environment")
	}
	switch {
	case len(p.Strict) == 0:
	case len(p.Mandatory) == len(p.Strict):
		fmt.Fprintf(&b, "; %s mandatory (deny)", strings.Join(p.Mandatory, ", "))
	case len(p.Mandatory) == 0:
		fmt.Fprintf(&b, "; %s advisory (mandatory in %s)", strings.Join(p.Strict, ", "), orNone(p.StrictIn))
	default:
		fmt.Fprintf(&b, "; %s mandatory (deny), the other strict rules advisory", strings.Join(p.Mandatory, ", "))
	}
	return b.String()
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "no environment"
	}
	return strings.Join(s, ", ")
}

// KnownEnvironments are the environments the rules' settings (the strict rules'
// `environments`, their defaults and every value cfg gives them) and cfg's
// `environments:` name, sorted.
func KnownEnvironments(cfg *checkconfig.Config, rules []evaluate.Rule) []string {
	known := map[string]bool{}
	add := func(v any) {
		list, _ := v.([]any)
		for _, e := range list {
			if s, ok := e.(string); ok {
				known[s] = true
			}
		}
	}
	configured := []map[string]map[string]any{}
	if cfg != nil {
		configured = append(configured, cfg.Thresholds)
		for env, e := range cfg.Environments {
			known[env] = true
			configured = append(configured, e.Thresholds)
		}
	}
	for _, r := range rules {
		schema, ok := checkconfig.SettingSchemas(r.Name)["environments"]
		if !ok {
			continue
		}
		add(schema["default"])
		for _, th := range configured {
			add(th[r.Name]["environments"])
		}
	}
	return slices.Sorted(maps.Keys(known))
}

// maxEnvTypo is the largest edit distance at which an unknown --env is taken for a
// misspelt known one (prodd, prd, pord) and refused. Farther names are new environments
// judged by the default profile, which the verdict states: perf is three edits from prod.
const maxEnvTypo = 2

// misspelt returns the known environment env is a misspelling of, if any.
func misspelt(env string, known []string) (string, bool) {
	return spelling.ClosestWithin(env, known, maxEnvTypo)
}

// profile is how the rules judge env with the data they are given (data.config for env).
// It refuses, when refuse is set (env was given by --env), an environment no rule or
// configuration names that is a misspelling of one they do.
func profile(env string, refuse bool, cfg *checkconfig.Config, data map[string]any, rules []evaluate.Rule) (Profile, error) {
	p := Profile{Env: env}
	known := KnownEnvironments(cfg, rules)
	p.Known = slices.Contains(known, env)
	if env != "" && !p.Known && refuse {
		if meant, ok := misspelt(env, known); ok {
			return p, fmt.Errorf("--env %q: no rule or check configuration names that environment (they name %s); did you mean %q? "+
				"A new environment gets the default profile: name it under environments: in --check-config to check it", env, strings.Join(known, ", "), meant)
		}
	}
	if cfg != nil {
		_, p.Configured = cfg.Environments[env]
	}
	in := map[string]bool{}
	for _, r := range rules {
		schema, ok := checkconfig.SettingSchemas(r.Name)["environments"]
		if !ok || r.Level != evaluate.Deny {
			continue
		}
		settings, _ := data[r.Name].(map[string]any)
		envs, ok := settings["environments"].([]any)
		if !ok {
			envs, _ = schema["default"].([]any)
		}
		enforce, _ := settings["enforce"].(bool)
		p.Strict = append(p.Strict, r.ID)
		mandatory := enforce
		for _, e := range envs {
			s, _ := e.(string)
			in[s] = true
			mandatory = mandatory || s == env
		}
		if mandatory {
			p.Mandatory = append(p.Mandatory, r.ID)
		}
	}
	slices.Sort(p.Strict)
	slices.Sort(p.Mandatory)
	p.StrictIn = slices.Sorted(maps.Keys(in))
	return p, nil
}
