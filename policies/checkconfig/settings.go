package checkconfig

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v5"

	"github.com/eventpipe/eventpipe/spec"
)

// policies/lib_settings.rego holds the settings' defaults for every runtime of the rules;
// TestSettingsFileCurrent writes it from the schemas below (settingsfile_test.go).
//go:generate go test -run TestSettingsFileCurrent . -args -update

// strictSettings are the settings of the rules that are mandatory in some environments
// only: where (default ["prod"]) or everywhere.
func strictSettings() map[string]map[string]any {
	return map[string]map[string]any{
		"environments": {
			"type":        "array",
			"items":       map[string]any{"type": "string", "minLength": 1},
			"uniqueItems": true,
			"default":     []any{"prod"},
			"description": "Environments (the eventpipe_env label of the stack's resources) where the rule is mandatory; elsewhere its advisory twin reports the finding.",
		},
		"enforce": {
			"type":        "boolean",
			"default":     false,
			"description": "Make the rule mandatory in every environment.",
		},
	}
}

// settingSchemas are the settings each configurable rule reads from data.config.<rule>, as
// JSON schemas of their values, each with its default. Every other setting is rejected,
// so a misspelt or misplaced one cannot silently leave a threshold at its default. The
// settings that judge a bounded stack setting come from spec.Bounds: each defaults to the
// end of the range the stack config accepts, so the check's default range is the
// config's, and a team's configuration narrows it.
func settingSchemas() map[string]map[string]map[string]any {
	out := map[string]map[string]map[string]any{}
	for _, b := range spec.Bounds() {
		for _, c := range b.Checks {
			lo, hi := c.Range(b)
			typ := "number"
			if c.Unit == 1 {
				typ = "integer"
			}
			if out[c.Rule] == nil {
				out[c.Rule] = map[string]map[string]any{}
			}
			out[c.Rule][c.Setting] = map[string]any{
				"type": typ, "minimum": number(lo), "maximum": number(hi), "default": number(c.Default(b)),
				"description": fmt.Sprintf("%s Default %v: the end of the range %s accepts (%s).", c.Description, number(c.Default(b)), spec.Namespace+":"+b.Path, b.Allowed()),
			}
		}
	}
	for _, rule := range []string{"deny_subscription_expires", "deny_subscription_removed", "stack_deny_subscription_without_dlq_alert", "stack_deny_subscription_without_backlog_alert"} {
		out[rule] = strictSettings()
	}
	return out
}

// number is f as an int64 when it is whole (as JSON schemas and Rego data write it).
func number(f float64) any {
	if f == math.Trunc(f) && math.Abs(f) < 1<<53 {
		return int64(f)
	}
	return f
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
	return settingSchemas()[rule]
}

// CheckSettings validates the settings of rule (values as encoding/json decodes them)
// against their schemas: every unknown setting, wrong value and upside-down range is
// reported, each prefixed by where (how the caller's configuration names the rule).
func CheckSettings(where, rule string, settings map[string]any) error {
	schema := settingSchemas()[rule]
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
	if err := checkOrder(where, rule, settings); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// checkOrder reports the ordered settings of rule upside down in settings (values as
// encoding/json decodes them), a setting left out taking its default.
func checkOrder(where, rule string, settings map[string]any) error {
	pair, ok := orderedSettings[rule]
	if !ok {
		return nil
	}
	value := func(key string) (float64, bool) {
		if v, set := settings[key]; set {
			f, ok := v.(float64)
			return f, ok
		}
		switch d := settingSchemas()[rule][key]["default"].(type) {
		case int64:
			return float64(d), true
		case float64:
			return d, true
		}
		return 0, false
	}
	low, lowOK := value(pair[0])
	high, highOK := value(pair[1])
	if lowOK && highOK && low > high {
		return fmt.Errorf("%s: %s %v is above %s %v", where, pair[0], low, pair[1], high)
	}
	return nil
}

// KnownSettings says which settings rule takes.
func KnownSettings(rule string) string {
	settings := settingSchemas()[rule]
	if len(settings) == 0 {
		return "it takes only enforcementLevel"
	}
	return "its settings are " + strings.Join(slices.Sorted(maps.Keys(settings)), ", ")
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
