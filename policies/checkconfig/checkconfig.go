// Package checkconfig reads the `eventpipe check` configuration file: rule thresholds for
// every environment and per environment, and waivers — rule id, URN pattern, reason and
// expiry date — and turns it into the rules' data.config for one environment (Data), the
// document conftest and opa eval users pass with --data. The rules apply the waivers: a
// waiver suppresses matching findings until it expires; an expired waiver fails the check,
// naming itself.
package checkconfig

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/eventpipe/eventpipe/internal/spelling"
	"github.com/eventpipe/eventpipe/policies/evaluate"
)

// Config is the parsed configuration file.
type Config struct {
	// Thresholds apply in every environment: rule name → key → value.
	Thresholds map[string]map[string]any `yaml:"thresholds"`
	// Environments override thresholds per environment (stack name).
	Environments map[string]Environment `yaml:"environments"`
	// Waivers suppress findings.
	Waivers []Waiver `yaml:"waivers"`

	path string
}

// Environment holds one environment's overrides.
type Environment struct {
	Thresholds map[string]map[string]any `yaml:"thresholds"`
}

// Waiver suppresses the findings of one rule on the resources whose URN matches a pattern
// (`*` matches any run of characters, `?` one character) through the expiry date.
type Waiver struct {
	Rule    string `yaml:"rule" json:"rule"`
	URN     string `yaml:"urn" json:"urn"`
	Reason  string `yaml:"reason" json:"reason"`
	Expires string `yaml:"expires" json:"expires"`
}

// Load reads a configuration file.
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading check configuration: %w", err)
	}
	c, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	c.path = path
	return c, nil
}

// Parse parses and validates configuration YAML. Unknown fields are errors.
func Parse(data []byte) (*Config, error) {
	var c Config
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&c); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("parsing check configuration (fields: thresholds, environments.<env>.thresholds, waivers): %w", unknownKeys(err))
	}
	for i := range c.Waivers {
		w := &c.Waivers[i]
		where := fmt.Sprintf("waivers[%d]", i)
		if w.Rule == "" {
			return nil, fmt.Errorf("%s.rule is empty: name the rule id the waiver covers, e.g. EP005", where)
		}
		if w.URN == "" {
			return nil, fmt.Errorf("%s.urn is empty: give the resource URN or a pattern such as urn:pulumi:dev::eventpipe::*::legacy-*", where)
		}
		if strings.TrimSpace(w.Reason) == "" {
			return nil, fmt.Errorf("%s.reason is empty: every waiver records why the finding is accepted", where)
		}
		if _, err := time.Parse(time.DateOnly, w.Expires); err != nil {
			return nil, fmt.Errorf("%s.expires %q is not a date: use YYYY-MM-DD, e.g. 2027-01-31", where, w.Expires)
		}
	}
	return &c, nil
}

// Path is the file the configuration was loaded from ("" when parsed from memory).
func (c *Config) Path() string {
	if c == nil {
		return ""
	}
	return c.path
}

// Data is data.config for env: the thresholds for every environment, overridden key by
// key by env's, "environment": env when env is set, and "waivers". (The rules judge the
// waivers' expiry on config.today, YYYY-MM-DD, when it is set, or on today's date in UTC.)
func (c *Config) Data(env string) map[string]any {
	out := map[string]any{}
	merge := func(th map[string]map[string]any) {
		for rule, kv := range th {
			m, _ := out[rule].(map[string]any)
			if m == nil {
				m = map[string]any{}
				out[rule] = m
			}
			maps.Copy(m, kv)
		}
	}
	waivers := []Waiver{}
	if c != nil {
		merge(c.Thresholds)
		if e, ok := c.Environments[env]; ok {
			merge(e.Thresholds)
		}
		waivers = append(waivers, c.Waivers...)
	}
	if env != "" {
		out["environment"] = env
	}
	out["waivers"] = waivers
	return out
}

// Validate checks the configuration against the loaded rules: thresholds must name rule
// names and settings those rules read, with values they accept (CheckSettings, as the
// Pulumi analyzer checks its policy configuration), and waivers must name rule ids, so a
// typo cannot silently disable a setting.
func (c *Config) Validate(rules []evaluate.Rule) error {
	if c == nil {
		return nil
	}
	names, ids := map[string]bool{}, map[string]bool{}
	for _, r := range rules {
		names[r.Name], ids[r.ID] = true, true
	}
	check := func(where string, th map[string]map[string]any) error {
		for _, rule := range slices.Sorted(maps.Keys(th)) {
			if !names[rule] {
				return fmt.Errorf("%s.%s: no rule has that name; thresholds are keyed by rule name (one of %s)", where, rule, strings.Join(slices.Sorted(maps.Keys(names)), ", "))
			}
			settings, err := asJSON(th[rule])
			if err != nil {
				return fmt.Errorf("%s.%s: %w", where, rule, err)
			}
			if err := CheckSettings(where+"."+rule, rule, settings); err != nil {
				return err
			}
		}
		return nil
	}
	if err := check("thresholds", c.Thresholds); err != nil {
		return err
	}
	for _, env := range slices.Sorted(maps.Keys(c.Environments)) {
		if err := check("environments."+env+".thresholds", c.Environments[env].Thresholds); err != nil {
			return err
		}
		// Each block may be in order alone, and the two together not (thresholds min 50,
		// environments.prod max 20): judge what the rules get in env.
		for _, rule := range slices.Sorted(maps.Keys(orderedSettings)) {
			merged, ok := c.Data(env)[rule].(map[string]any)
			if !ok {
				continue // the defaults are in order
			}
			settings, err := asJSON(merged)
			if err == nil {
				err = checkOrder(fmt.Sprintf("environments.%s.thresholds.%s (with thresholds.%s)", env, rule, rule), rule, settings)
			}
			if err != nil && names[rule] {
				return err
			}
		}
	}
	for i, w := range c.Waivers {
		if !ids[w.Rule] {
			return fmt.Errorf("waivers[%d].rule %q: no rule has that id (see `eventpipe check --list-rules`)", i, w.Rule)
		}
	}
	return nil
}

// asJSON is settings with the values encoding/json would decode from them (numbers as
// float64), as the setting schemas are checked.
func asJSON(settings map[string]any) (map[string]any, error) {
	raw, err := json.Marshal(settings)
	if err != nil {
		return nil, fmt.Errorf("settings cannot be read as JSON: %w", err)
	}
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, fmt.Errorf("settings cannot be read as JSON: %w", err)
	}
	return out, nil
}

// unknownField is how yaml.v3 reports a key KnownFields refuses.
var unknownField = regexp.MustCompile(`^(line \d+): field (.+) not found in type checkconfig\.(\w+)$`)

// unknownKeys rewrites the unknown-key errors of a decode in the file's own terms: where
// the key is, the keys allowed there and the one it was likely meant to be (never a Go
// type name). Any other error is returned as it is.
func unknownKeys(err error) error {
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		return err
	}
	places := map[string]struct {
		where string
		typ   reflect.Type
	}{
		"Config":      {"at the top level", reflect.TypeFor[Config]()},
		"Environment": {"in environments.<env>", reflect.TypeFor[Environment]()},
		"Waiver":      {"in a waiver", reflect.TypeFor[Waiver]()},
	}
	msgs := make([]string, 0, len(te.Errors))
	for _, e := range te.Errors {
		m := unknownField.FindStringSubmatch(e)
		if m == nil {
			msgs = append(msgs, e)
			continue
		}
		place, ok := places[m[3]]
		if !ok {
			msgs = append(msgs, e)
			continue
		}
		var keys []string
		for i := range place.typ.NumField() {
			if tag, _, _ := strings.Cut(place.typ.Field(i).Tag.Get("yaml"), ","); tag != "" && tag != "-" {
				keys = append(keys, tag)
			}
		}
		msg := fmt.Sprintf("%s: unknown key %q %s (keys: %s)", m[1], m[2], place.where, strings.Join(keys, ", "))
		if meant, ok := spelling.Closest(m[2], keys); ok {
			msg += fmt.Sprintf("; did you mean %q?", meant)
		}
		msgs = append(msgs, msg)
	}
	return errors.New(strings.Join(msgs, "; "))
}
