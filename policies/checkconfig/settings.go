package checkconfig

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v5"
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
// JSON schemas of their values. Every other setting is rejected, so a misspelt or
// misplaced one cannot silently leave a threshold at its default. The defaults are in
// each rule's description.
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
	"deny_subscription_removed": {
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

// SettingSchemas are the JSON schemas of the settings rule takes, by setting name; nil
// when it takes none.
func SettingSchemas(rule string) map[string]map[string]any {
	return maps.Clone(settingSchemas[rule])
}

// CheckSettings validates the settings of rule (values as encoding/json decodes them)
// against their schemas: every unknown setting, wrong value and upside-down range is
// reported, each prefixed by where (how the caller's configuration names the rule).
func CheckSettings(where, rule string, settings map[string]any) error {
	schema := settingSchemas[rule]
	var errs []error
	for _, key := range slices.Sorted(maps.Keys(settings)) {
		propSchema, ok := schema[key]
		if !ok {
			errs = append(errs, fmt.Errorf("%s: no setting %q; %s", where, key, KnownSettings(rule)))
			continue
		}
		if err := validate(propSchema, settings[key]); err != nil {
			errs = append(errs, fmt.Errorf("%s: setting %q = %v: %w", where, key, settings[key], err))
		}
	}
	if pair, ok := orderedSettings[rule]; ok {
		low, lowSet := settings[pair[0]].(float64)
		high, highSet := settings[pair[1]].(float64)
		if lowSet && highSet && low > high {
			errs = append(errs, fmt.Errorf("%s: %s %v is above %s %v", where, pair[0], low, pair[1], high))
		}
	}
	return errors.Join(errs...)
}

// KnownSettings says which settings rule takes.
func KnownSettings(rule string) string {
	if len(settingSchemas[rule]) == 0 {
		return "it takes only enforcementLevel"
	}
	return "its settings are " + strings.Join(slices.Sorted(maps.Keys(settingSchemas[rule])), ", ")
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
