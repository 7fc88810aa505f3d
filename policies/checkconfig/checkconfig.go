// Package checkconfig reads the `eventpipe check` configuration file: rule thresholds for
// every environment and per environment (they become data.config.<rule>.<key>, the place
// Pulumi policy configuration puts them), and waivers — rule id, URN pattern, reason and
// expiry date. A waiver suppresses matching findings until it expires; an expired waiver
// fails the check, naming itself.
package checkconfig

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/eventpipe/eventpipe/policies/engine"
	"github.com/eventpipe/eventpipe/policies/plan"
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
// (`*` matches any run of characters, `?` one character) until the expiry date.
type Waiver struct {
	Rule    string `yaml:"rule"`
	URN     string `yaml:"urn"`
	Reason  string `yaml:"reason"`
	Expires string `yaml:"expires"`

	expires time.Time
	pattern *regexp.Regexp
}

// ExpiredRule is the rule an expired waiver is reported under.
func ExpiredRule() engine.Rule {
	return engine.Rule{
		Name:        "deny_expired_waiver",
		ID:          "EP000",
		Title:       "Expired waiver",
		Description: "A waiver in the check configuration has passed its expiry date. Waivers are temporary by design: an expired one fails the check until it is renewed or removed.",
		Severity:    "high",
		Fix:         "Fix the waived finding and delete the waiver, or renew it with a new expiry date and a current reason.",
		Level:       engine.Deny,
	}
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
		return nil, fmt.Errorf("parsing check configuration (fields: thresholds, environments.<env>.thresholds, waivers): %w", err)
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
		t, err := time.Parse(time.DateOnly, w.Expires)
		if err != nil {
			return nil, fmt.Errorf("%s.expires %q is not a date: use YYYY-MM-DD, e.g. 2027-01-31", where, w.Expires)
		}
		w.expires = t
		w.pattern = glob(w.URN)
	}
	return &c, nil
}

// glob compiles a URN pattern: * matches any run of characters, ? exactly one.
func glob(p string) *regexp.Regexp {
	var b strings.Builder
	b.WriteString("^")
	for _, r := range p {
		switch r {
		case '*':
			b.WriteString(".*")
		case '?':
			b.WriteString(".")
		default:
			b.WriteString(regexp.QuoteMeta(string(r)))
		}
	}
	b.WriteString("$")
	return regexp.MustCompile(b.String())
}

// Data is data.config for env: the thresholds for every environment, overridden key by
// key by env's, plus "environment": env when env is set.
func (c *Config) Data(env string) map[string]any {
	out := map[string]any{}
	merge := func(th map[string]map[string]any) {
		for rule, kv := range th {
			m, _ := out[rule].(map[string]any)
			if m == nil {
				m = map[string]any{}
				out[rule] = m
			}
			for k, v := range kv {
				m[k] = v
			}
		}
	}
	if c != nil {
		merge(c.Thresholds)
		if e, ok := c.Environments[env]; ok {
			merge(e.Thresholds)
		}
	}
	if env != "" {
		out["environment"] = env
	}
	return out
}

// Validate checks the configuration against the loaded rules: thresholds must name rule
// names and waivers rule ids, so a typo cannot silently disable a setting.
func (c *Config) Validate(rules []engine.Rule) error {
	if c == nil {
		return nil
	}
	names, ids := map[string]bool{}, map[string]bool{}
	var nameList []string
	for _, r := range rules {
		names[r.Name], ids[r.ID] = true, true
		nameList = append(nameList, r.Name)
	}
	sort.Strings(nameList)
	check := func(where string, th map[string]map[string]any) error {
		for rule := range th {
			if !names[rule] {
				return fmt.Errorf("%s.%s: no rule has that name; thresholds are keyed by rule name (one of %s)", where, rule, strings.Join(nameList, ", "))
			}
		}
		return nil
	}
	if err := check("thresholds", c.Thresholds); err != nil {
		return err
	}
	for env, e := range c.Environments {
		if err := check("environments."+env+".thresholds", e.Thresholds); err != nil {
			return err
		}
	}
	for i, w := range c.Waivers {
		if !ids[w.Rule] {
			return fmt.Errorf("waivers[%d].rule %q: no rule has that id (see `eventpipe check --list-rules`)", i, w.Rule)
		}
	}
	return nil
}

// Apply marks the findings that a live waiver covers, and reports every expired waiver as
// a deny finding of ExpiredRule. today is the date the check runs.
func (c *Config) Apply(findings []engine.Finding, today time.Time) []engine.Finding {
	if c == nil || len(c.Waivers) == 0 {
		return findings
	}
	day := time.Date(today.Year(), today.Month(), today.Day(), 0, 0, 0, 0, time.UTC)
	out := make([]engine.Finding, 0, len(findings))
	for _, f := range findings {
		for _, w := range c.Waivers {
			if !w.expires.Before(day) && w.Rule == f.Rule.ID && w.pattern.MatchString(f.URN) {
				f.Waiver = &engine.Waiver{RuleID: w.Rule, URN: w.URN, Reason: w.Reason, Expires: w.Expires, Source: c.path}
				break
			}
		}
		out = append(out, f)
	}
	for _, w := range c.Waivers {
		if w.expires.Before(day) {
			out = append(out, engine.Finding{
				Rule:     ExpiredRule(),
				Level:    engine.Deny,
				URN:      w.URN,
				Location: waiverLocation(c.path),
				Message:  fmt.Sprintf("the waiver of %s for %s expired on %s (reason given: %s)", w.Rule, w.URN, w.Expires, w.Reason),
			})
		}
	}
	engine.Sort(out)
	return out
}

func waiverLocation(path string) *plan.Location {
	if path == "" {
		return nil
	}
	return &plan.Location{File: path}
}
