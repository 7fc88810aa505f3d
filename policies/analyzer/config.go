package analyzer

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"google.golang.org/protobuf/types/known/structpb"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"

	"github.com/eventpipe/eventpipe/policies/checkconfig"
	"github.com/eventpipe/eventpipe/policies/evaluate"
)

// allPolicies is the name Pulumi policy configuration uses for every policy at once. Pulumi
// applies its enforcement level to each policy before it calls Configure, and passes the
// entry on as well.
const allPolicies = "all"

// configSchema is the Pulumi config schema of rule r, nil when it takes no settings.
func configSchema(r evaluate.Rule) (*pulumirpc.PolicyConfigSchema, error) {
	props := checkconfig.SettingSchemas(r.Name)
	if props == nil {
		return nil, nil
	}
	asAny := make(map[string]any, len(props))
	for k, v := range props {
		asAny[k] = v
	}
	s, err := structpb.NewStruct(asAny)
	if err != nil {
		return nil, fmt.Errorf("the config schema of %s: %w", r.Name, err)
	}
	return &pulumirpc.PolicyConfigSchema{Properties: s}, nil
}

// defaultLevel is rule r's enforcement level when no configuration changes it.
// Deny rules are mandatory, warn rules advisory; a rule on operations (EP016/EP017), which
// an analyzer can never enforce, is advisory, so that a configuration asking for it to be
// mandatory is one the user wrote (Pulumi fills in every policy's default before
// Configure: pkg/resource/analyzer/config.go, ReconcilePolicyPackConfig).
func defaultLevel(r evaluate.Rule) pulumirpc.EnforcementLevel {
	if r.Level == evaluate.Deny && !r.NeedsOperations {
		return pulumirpc.EnforcementLevel_MANDATORY
	}
	return pulumirpc.EnforcementLevel_ADVISORY
}

// policyConfig is a Configure request read against the rules: each rule's enforcement
// level, and the settings for data.config.
type policyConfig struct {
	levels map[string]pulumirpc.EnforcementLevel
	data   map[string]any
}

// defaultConfig is the configuration before (or without) Configure.
func defaultConfig(rules []evaluate.Rule) policyConfig {
	c := policyConfig{levels: map[string]pulumirpc.EnforcementLevel{}, data: map[string]any{}}
	for _, r := range rules {
		c.levels[r.Name] = defaultLevel(r)
	}
	return c
}

// parseConfig reads Pulumi policy configuration (policy name → enforcement level and
// settings). Every mistake is reported, each naming the policy, the setting and the fix.
// A remediate level counts as mandatory: the rules only report.
//
// A rule on operations (custom.needs_operations: EP016, EP017) is never seen by an
// analyzer: a configuration that asks for it to be enforced — mandatory (also through
// "all"), or its enforce setting true — is refused, naming the rule and the command that
// enforces it, instead of passing previews that replace subscriptions.
func parseConfig(rules []evaluate.Rule, req map[string]*pulumirpc.PolicyConfig) (policyConfig, error) {
	c := defaultConfig(rules)
	byName := make(map[string]evaluate.Rule, len(rules))
	for _, r := range rules {
		byName[r.Name] = r
	}
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(req)) {
		if name == allPolicies {
			continue
		}
		if _, known := c.levels[name]; !known {
			errs = append(errs, fmt.Errorf("policy %q: no such policy in this pack; the policies are %s", name, strings.Join(slices.Sorted(maps.Keys(c.levels)), ", ")))
			continue
		}
		pc := req[name]
		switch level := pc.GetEnforcementLevel(); level {
		case pulumirpc.EnforcementLevel_ADVISORY, pulumirpc.EnforcementLevel_MANDATORY, pulumirpc.EnforcementLevel_DISABLED:
			c.levels[name] = level
		case pulumirpc.EnforcementLevel_REMEDIATE:
			c.levels[name] = pulumirpc.EnforcementLevel_MANDATORY
		default:
			errs = append(errs, fmt.Errorf("policy %q: enforcement level %v is none of advisory, mandatory, disabled", name, level))
		}
		settings := pc.GetProperties().AsMap()
		delete(settings, "enforcementLevel") // Pulumi takes it out; tolerate it if sent
		if err := checkSettings(name, settings); err != nil {
			errs = append(errs, err)
			continue
		}
		if r := byName[name]; r.NeedsOperations {
			if err := unenforceable(r, c.levels[name], settings); err != nil {
				errs = append(errs, err)
				continue
			}
		}
		if len(settings) > 0 {
			c.data[name] = settings
		}
	}
	return c, errors.Join(errs...)
}

// checkSettings validates the settings of policy name: those of `eventpipe check
// --config`, under the policy name.
func checkSettings(name string, settings map[string]any) error {
	where := fmt.Sprintf("policy %q", name)
	if _, ok := settings["properties"]; ok {
		return fmt.Errorf("%s: settings go directly under the policy name, not under \"properties\": write {%q: {\"<setting>\": <value>}}; %s", where, name, checkconfig.KnownSettings(name))
	}
	return checkconfig.CheckSettings(where, name, settings)
}

// unenforceable is the error for a configuration asking an analyzer to enforce rule r on
// operations (level mandatory, or its enforce setting true), nil otherwise.
func unenforceable(r evaluate.Rule, level pulumirpc.EnforcementLevel, settings map[string]any) error {
	asked := ""
	switch {
	case level == pulumirpc.EnforcementLevel_MANDATORY:
		asked = "mandatory (directly or through \"all\")"
	case settings["enforce"] == true:
		asked = "enforced everywhere (enforce: true)"
	default:
		return nil
	}
	return fmt.Errorf("policy %q (%s) is configured %s, but a policy pack cannot enforce it: %s "+
		"Enforce it with `pulumi preview --json --show-sames | eventpipe check -` (add --env ENV), "+
		"and set %q to \"advisory\" or \"disabled\" here", r.Name, r.ID, asked, unseenWhy, r.Name)
}
