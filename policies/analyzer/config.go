package analyzer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v5"
	"google.golang.org/protobuf/types/known/structpb"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
)

// environmentsSchema and enforceSchema are the settings of the rules that are mandatory in
// some environments only.
var (
	environmentsSchema = map[string]any{
		"type":        "array",
		"items":       map[string]any{"type": "string", "minLength": 1},
		"uniqueItems": true,
		"description": "Environments (the eventpipe_env label of the stack's resources) where the rule is mandatory; elsewhere its advisory twin reports the finding.",
	}
	enforceSchema = map[string]any{
		"type":        "boolean",
		"description": "Make the rule mandatory in every environment.",
	}
)

// settingSchemas are the settings each configurable rule reads from data.config.<rule>, as
// JSON schemas of their values. Pulumi shows them and validates policy configuration
// against them; Configure rejects any other setting, so a misspelt or misplaced one cannot
// silently leave a threshold at its default. The defaults are in each rule's description.
var settingSchemas = map[string]map[string]map[string]any{
	"deny_dead_letter_attempts_out_of_range": {
		"min": map[string]any{"type": "integer", "minimum": 5, "maximum": 100, "description": "Fewest maxDeliveryAttempts allowed (Pub/Sub accepts 5-100; unset or 0 means 5)."},
		"max": map[string]any{"type": "integer", "minimum": 5, "maximum": 100, "description": "Most maxDeliveryAttempts allowed."},
	},
	"deny_retry_policy": {
		"minimumBackoffSeconds": map[string]any{"type": "number", "minimum": 0, "maximum": 600, "description": "Shortest retryPolicy.minimumBackoff allowed, in seconds."},
		"maximumBackoffSeconds": map[string]any{"type": "number", "minimum": 0, "maximum": 600, "description": "Longest retryPolicy.maximumBackoff allowed, in seconds."},
	},
	"deny_subscription_expires": {
		"environments": environmentsSchema,
		"enforce":      enforceSchema,
	},
	"stack_warn_dlq_retention_short": {
		"minimumDays": map[string]any{"type": "number", "minimum": 0, "maximum": 31, "description": "Shortest messageRetentionDuration of a DLQ subscription allowed, in days."},
	},
	"stack_deny_subscription_without_dlq_alert": {
		"environments": environmentsSchema,
		"enforce":      enforceSchema,
	},
	"stack_deny_subscription_without_backlog_alert": {
		"environments": environmentsSchema,
		"enforce":      enforceSchema,
	},
}

// orderedSettings are pairs of settings of one rule where the first must not exceed the
// second (a JSON schema cannot say so).
var orderedSettings = map[string][2]string{
	"deny_dead_letter_attempts_out_of_range": {"min", "max"},
	"deny_retry_policy":                      {"minimumBackoffSeconds", "maximumBackoffSeconds"},
}

// allPolicies is the name Pulumi policy configuration uses for every policy at once. Pulumi
// applies its enforcement level to each policy before it calls Configure, and passes the
// entry on as well.
const allPolicies = "all"

// configSchema is the Pulumi config schema of rule r, nil when it takes no settings.
func configSchema(r rule) (*pulumirpc.PolicyConfigSchema, error) {
	props, ok := settingSchemas[r.Name]
	if !ok {
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
func defaultLevel(r rule) pulumirpc.EnforcementLevel {
	if r.Mandatory {
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
func defaultConfig(rules []rule) policyConfig {
	c := policyConfig{levels: map[string]pulumirpc.EnforcementLevel{}, data: map[string]any{}}
	for _, r := range rules {
		c.levels[r.Name] = defaultLevel(r)
	}
	return c
}

// parseConfig reads Pulumi policy configuration (policy name → enforcement level and
// settings). Every mistake is reported, each naming the policy, the setting and the fix.
// A remediate level counts as mandatory: the rules only report.
func parseConfig(rules []rule, req map[string]*pulumirpc.PolicyConfig) (policyConfig, error) {
	c := defaultConfig(rules)
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
		if len(settings) > 0 {
			c.data[name] = settings
		}
	}
	return c, errors.Join(errs...)
}

// checkSettings validates the settings of policy name against its schema.
func checkSettings(name string, settings map[string]any) error {
	schema := settingSchemas[name]
	var errs []error
	for _, key := range slices.Sorted(maps.Keys(settings)) {
		propSchema, ok := schema[key]
		switch {
		case ok:
			if err := validate(propSchema, settings[key]); err != nil {
				errs = append(errs, fmt.Errorf("policy %q: setting %q = %v: %w", name, key, settings[key], err))
			}
		case key == "properties":
			errs = append(errs, fmt.Errorf("policy %q: settings go directly under the policy name, not under \"properties\": write {%q: {\"<setting>\": <value>}}; %s", name, name, known(name)))
		default:
			errs = append(errs, fmt.Errorf("policy %q: no setting %q; %s", name, key, known(name)))
		}
	}
	if pair, ok := orderedSettings[name]; ok {
		low, lowSet := settings[pair[0]].(float64)
		high, highSet := settings[pair[1]].(float64)
		if lowSet && highSet && low > high {
			errs = append(errs, fmt.Errorf("policy %q: %s %v is above %s %v", name, pair[0], low, pair[1], high))
		}
	}
	return errors.Join(errs...)
}

// known lists the settings policy name takes.
func known(name string) string {
	if len(settingSchemas[name]) == 0 {
		return "it takes only enforcementLevel"
	}
	return "its settings are " + strings.Join(slices.Sorted(maps.Keys(settingSchemas[name])), ", ")
}

// validate checks one setting value against its JSON schema.
func validate(schema map[string]any, value any) error {
	raw, err := json.Marshal(schema)
	if err != nil {
		return err
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("setting.json", bytes.NewReader(raw)); err != nil {
		return err
	}
	s, err := c.Compile("setting.json")
	if err != nil {
		return err
	}
	if err := s.Validate(value); err != nil {
		var ve *jsonschema.ValidationError
		if errors.As(err, &ve) {
			return errors.New(leafMessage(ve))
		}
		return err
	}
	return nil
}

// leafMessage is the innermost cause of a validation error: the specific complaint.
func leafMessage(ve *jsonschema.ValidationError) string {
	for len(ve.Causes) > 0 {
		ve = ve.Causes[0]
	}
	return ve.Message
}
