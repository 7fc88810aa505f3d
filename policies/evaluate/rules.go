package evaluate

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
)

// Level is a rule's enforcement: deny findings fail the check, warn findings are advisory.
type Level string

// The enforcement levels, as conftest and Pulumi name them (mandatory / advisory).
const (
	Deny Level = "deny"
	Warn Level = "warn"
)

// Rule is one policy rule with the metadata from its # METADATA annotation.
type Rule struct {
	// Name is the Rego rule name, e.g. stack_deny_dead_letter_topic_unread.
	Name string `json:"name"`
	// ID is the stable rule id (custom.id), e.g. EP005.
	ID          string `json:"id"`
	Title       string `json:"title"`
	Description string `json:"description"`
	// Severity is custom.severity: critical, high, medium, low or info.
	Severity string `json:"severity"`
	// Fix tells how to resolve a finding (custom.fix).
	Fix   string `json:"fix"`
	Level Level  `json:"level"`
	// Stack is true for rules that see input.resources rather than one resource.
	Stack bool `json:"stack"`
	// NeedsCompleteStack marks rules whose deny rests on a resource being absent: on a
	// preview without unchanged resources their findings become warnings.
	NeedsCompleteStack bool `json:"needsCompleteStack,omitempty"`
	// NeedsOperations marks rules that judge what a document's steps do to resources
	// (custom.needs_operations): deletions and replacements. A Pulumi analyzer is given
	// resources, never steps, so it can never see their findings.
	NeedsOperations bool `json:"needsOperations,omitempty"`
}

// Severities are the severities a rule may declare, most severe first.
var Severities = []string{"critical", "high", "medium", "low", "info"}

// classify reports the level and scope a rule name implies, and whether it is a rule.
func classify(name string) (Level, bool, bool) {
	stack := strings.HasPrefix(name, "stack_")
	base := strings.TrimPrefix(name, "stack_")
	switch {
	case base == "deny" || base == "violation" || strings.HasPrefix(base, "deny_") || strings.HasPrefix(base, "violation_"):
		return Deny, stack, true
	case base == "warn" || strings.HasPrefix(base, "warn_"):
		return Warn, stack, true
	}
	return "", false, false
}

// rulesOf extracts every deny/warn rule of pkg from the compiled modules and checks that
// each carries complete metadata with a unique id.
func rulesOf(c *ast.Compiler, pkg string) ([]Rule, error) {
	byName := map[string]*Rule{}
	var fillErr error
	eachDefinition(c, pkg, func(name string, r *ast.Rule) {
		level, stack, ok := classify(name)
		if !ok || fillErr != nil {
			return
		}
		rule, seen := byName[name]
		if !seen {
			rule = &Rule{Name: name, Level: level, Stack: stack}
			byName[name] = rule
		}
		for _, a := range r.Annotations {
			if a.Scope != "rule" {
				continue
			}
			if err := fill(rule, a); err != nil {
				fillErr = fmt.Errorf("%s: rule %s: %w", r.Location.File, name, err)
				return
			}
		}
	})
	if fillErr != nil {
		return nil, fillErr
	}
	rules := make([]Rule, 0, len(byName))
	ids := map[string]string{}
	for _, r := range byName {
		var missing []string
		for field, v := range map[string]string{"custom.id": r.ID, "title": r.Title, "description": r.Description, "custom.severity": r.Severity, "custom.fix": r.Fix} {
			if v == "" {
				missing = append(missing, field)
			}
		}
		if len(missing) > 0 {
			sort.Strings(missing)
			return nil, fmt.Errorf("rule %s: its # METADATA annotation lacks %s; every rule needs id, title, severity, description and fix", r.Name, strings.Join(missing, ", "))
		}
		if !slices.Contains(Severities, r.Severity) {
			return nil, fmt.Errorf("rule %s: severity %q is not one of %s", r.Name, r.Severity, strings.Join(Severities, ", "))
		}
		if other, dup := ids[r.ID]; dup {
			return nil, fmt.Errorf("rules %s and %s share the id %s; ids must be unique", other, r.Name, r.ID)
		}
		ids[r.ID] = r.Name
		rules = append(rules, *r)
	}
	sort.Slice(rules, func(i, j int) bool { return rules[i].ID < rules[j].ID })
	return rules, nil
}

func fill(r *Rule, a *ast.Annotations) error {
	r.Title = a.Title
	r.Description = strings.TrimSpace(a.Description)
	str := func(key string) (string, error) {
		v, ok := a.Custom[key]
		if !ok {
			return "", nil
		}
		s, ok := v.(string)
		if !ok {
			return "", fmt.Errorf("custom.%s must be a string, got %T", key, v)
		}
		return strings.TrimSpace(s), nil
	}
	var err error
	if r.ID, err = str("id"); err != nil {
		return err
	}
	if r.Severity, err = str("severity"); err != nil {
		return err
	}
	if r.Fix, err = str("fix"); err != nil {
		return err
	}
	if v, ok := a.Custom["needs_complete_stack"]; ok {
		b, ok := v.(bool)
		if !ok {
			return fmt.Errorf("custom.needs_complete_stack must be true or false, got %v", v)
		}
		r.NeedsCompleteStack = b
	}
	if v, ok := a.Custom["needs_operations"]; ok {
		b, ok := v.(bool)
		if !ok {
			return fmt.Errorf("custom.needs_operations must be true or false, got %v", v)
		}
		r.NeedsOperations = b
	}
	return nil
}

// eachDefinition calls fn for every rule definition of package pkg with the rule's name.
func eachDefinition(c *ast.Compiler, pkg string, fn func(name string, r *ast.Rule)) {
	for _, m := range c.Modules {
		if m.Package.Path.String() != "data."+pkg {
			continue
		}
		for _, r := range m.Rules {
			name := r.Head.Name.String()
			if name == "" && len(r.Head.Reference) > 0 {
				name = r.Head.Reference[0].String()
			}
			fn(name, r)
		}
	}
}
