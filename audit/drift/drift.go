// Package drift compares what a stack declares with what is live: each declared topic,
// subscription, Cloud Run service, IAM grant, alert policy and Firestore TTL policy is
// looked up in the audit's model of the live project, and the settings the stack declares
// are compared with the live ones (a dead-letter policy changed by hand, a grant removed,
// an alert policy deleted). Values the stack cannot show (unknown until deployed, secret)
// are not compared; settings the stack leaves out are compared with Pub/Sub's defaults.
package drift

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"cloud.google.com/go/iam/apiv1/iampb"

	"github.com/eventpipe/eventpipe/audit/inventory"
	"github.com/eventpipe/eventpipe/audit/model"
	"github.com/eventpipe/eventpipe/spec"
)

// Resource is a declared resource: its URN, type token and inputs.
type Resource struct {
	URN    string
	Type   string
	Inputs map[string]any
}

// Field is one setting that differs.
type Field struct {
	Path string `json:"path"`
	// Declared and Live are the values; nil for absent.
	Declared any `json:"declared"`
	Live     any `json:"live"`
}

// Difference is one declared resource whose live state differs from the declaration.
type Difference struct {
	URN  string `json:"urn"`
	Type string `json:"type"`
	// Live is the Google name of the live resource compared (or looked for).
	Live string `json:"live"`
	// Missing is true when the resource (or grant) does not exist live.
	Missing bool    `json:"missing,omitempty"`
	Fields  []Field `json:"fields,omitempty"`
}

// Message describes the difference in one sentence.
func (d Difference) Message() string {
	kind := d.Type
	if i := strings.LastIndex(kind, ":"); i >= 0 {
		kind = kind[i+1:]
	}
	if d.Missing {
		return fmt.Sprintf("%s %s is declared in the stack but does not exist live", kind, d.Live)
	}
	parts := make([]string, 0, len(d.Fields))
	for _, f := range d.Fields {
		parts = append(parts, fmt.Sprintf("%s is %s live, %s in the stack", f.Path, show(f.Live), show(f.Declared)))
	}
	return fmt.Sprintf("live %s %s differs from the stack: %s", kind, d.Live, strings.Join(parts, "; "))
}

func show(v any) string {
	if v == nil {
		return "absent"
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// Compare compares each declared resource with the live model doc of inv. Declared
// resources of projects inv does not hold, and of types the audit does not read, are
// skipped; so is any comparison whose live side the audit could not read.
func Compare(declared []Resource, doc *model.Document, inv *inventory.Inventory) []Difference {
	projects := map[string]*inventory.Project{}
	for _, p := range inv.Projects {
		projects[p.ID] = p
	}
	var out []Difference
	for _, d := range declared {
		in := normalise(d.Inputs)
		project, _ := in["project"].(string)
		p, ok := projects[project]
		if !ok {
			continue
		}
		var diff *Difference
		switch d.Type {
		case model.TypeTopic, model.TypeSubscription:
			diff = compareResource(d, in, p, doc)
		case model.TypeService:
			diff = compareService(d, in, p, doc)
		case typeTopicMember, typeSubscriptionMember, typeServiceMember, typeProjectMember:
			diff = compareGrant(d, in, p)
		case model.TypeAlertPolicy:
			diff = compareAlertPolicy(d, in, p, doc)
		case model.TypeField:
			diff = compareField(d, in, p)
		}
		if diff != nil {
			out = append(out, *diff)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].URN < out[j].URN })
	return out
}

// compareResource compares a topic or subscription.
func compareResource(d Resource, in map[string]any, p *inventory.Project, doc *model.Document) *Difference {
	name, _ := in["name"].(string)
	if name == "" || unknownValue(name) {
		return nil
	}
	full := inventory.TopicName(p.ID, inventory.ShortName(name))
	if d.Type == model.TypeSubscription {
		full = inventory.SubscriptionName(p.ID, inventory.ShortName(name))
	}
	urn, ok := doc.URN(d.Type, full)
	if !ok {
		return &Difference{URN: d.URN, Type: d.Type, Live: full, Missing: true}
	}
	live, _ := doc.Resource(urn)
	fields := compareLeaves(flatten(in), flatten(normalise(live.Inputs)), settings[d.Type], defaults[d.Type], p.ID)
	if len(fields) == 0 {
		return nil
	}
	return &Difference{URN: d.URN, Type: d.Type, Live: full, Fields: fields}
}

// settings are the setting paths compared per type (and everything under them).
var settings = map[string][]string{
	model.TypeSubscription: {
		"topic", "ackDeadlineSeconds", "messageRetentionDuration", "retainAckedMessages", "enableMessageOrdering",
		"enableExactlyOnceDelivery", "filter", "expirationPolicy", "deadLetterPolicy", "retryPolicy", "pushConfig",
		"bigqueryConfig", "cloudStorageConfig", "labels",
	},
	model.TypeTopic:   {"messageRetentionDuration", "kmsKeyName", "labels"},
	model.TypeService: {"ingress", "invokerIamDisabled", "template.serviceAccount", "template.containers"},
}

// defaults are the values Pub/Sub (spec.PubSubSubscriptionDefaults, which the rules read
// too) and Cloud Run report for settings left out.
var defaults = map[string]map[string]any{
	model.TypeSubscription: spec.PubSubSubscriptionDefaults(),
	model.TypeService:      {"ingress": "INGRESS_TRAFFIC_ALL"},
}

// standalone are the defaults that hold when the setting's block is absent too (an
// absent expiration policy is the 31-day default); other defaults fill a block present on
// that side (a retry policy without a minimum backoff), not a block that is absent (no
// retry policy at all differs from one with the default backoffs).
var standalone = map[string]bool{"expirationPolicy.ttl": true}

// references are the settings that name a topic, which a stack may give by ID or full name.
var references = map[string]bool{"topic": true, "deadLetterPolicy.deadLetterTopic": true}

// compareLeaves compares the declared and live leaves under the compared settings. A leaf
// the stack cannot show is skipped; a leaf one side leaves out is compared with the
// default (or with the zero value); live labels the stack does not declare are ignored
// (providers and Google add their own).
func compareLeaves(declared, live map[string]any, compared []string, defs map[string]any, project string) []Field {
	var out []Field
	paths := map[string]any{}
	maps.Copy(paths, declared)
	maps.Copy(paths, live)
	for _, path := range slices.Sorted(maps.Keys(paths)) {
		if !under(path, compared) {
			continue
		}
		dv, dok := declared[path]
		lv, lok := live[path]
		if dok && unknownValue(dv) {
			continue
		}
		if !dok && strings.HasPrefix(path, "labels.") {
			continue
		}
		if !dok && blockPresent(declared, path) {
			dv = defs[path]
		}
		if !lok && blockPresent(live, path) {
			lv = defs[path]
		}
		if references[path] {
			dv, lv = fullTopic(project, dv), fullTopic(project, lv)
		}
		if equal(dv, lv) {
			continue
		}
		f := Field{Path: path}
		if dok {
			f.Declared = declared[path]
		}
		if lok {
			f.Live = live[path]
		}
		out = append(out, f)
	}
	return out
}

// blockPresent reports whether a default for path applies on a side with leaves: a
// top-level setting, a standalone default, or a setting whose block the side has.
func blockPresent(leaves map[string]any, path string) bool {
	block, _, nested := strings.Cut(path, ".")
	if !nested || standalone[path] {
		return true
	}
	for p := range leaves {
		if p == block || strings.HasPrefix(p, block+".") {
			return true
		}
	}
	return false
}

// under reports whether path is one of prefixes or below one.
func under(path string, prefixes []string) bool {
	for _, p := range prefixes {
		if path == p || strings.HasPrefix(path, p+".") || strings.HasPrefix(path, p+"[") {
			return true
		}
	}
	return false
}

// equal compares two leaves, a missing one (nil) equal to a zero value.
func equal(a, b any) bool {
	if isZero(a) && isZero(b) {
		return true
	}
	return a == b
}

func isZero(v any) bool {
	switch t := v.(type) {
	case nil:
		return true
	case string:
		return t == ""
	case bool:
		return !t
	case float64:
		return t == 0
	case map[string]any:
		return len(t) == 0
	case []any:
		return len(t) == 0
	}
	return false
}

// fullTopic expands a topic ID to projects/P/topics/ID.
func fullTopic(project string, v any) any {
	s, ok := v.(string)
	if !ok || s == "" || strings.Contains(s, "/") {
		return v
	}
	return inventory.TopicName(project, s)
}

// unknownValue reports whether v is (or holds) a value the stack cannot show.
func unknownValue(v any) bool {
	s, ok := v.(string)
	return ok && (strings.Contains(s, model.UnknownValue) || s == secretValue)
}

// secretValue is how plans show a secret.
const secretValue = "[secret]"

// normalise gives inputs plain JSON types (float64 numbers), as both sides compare.
func normalise(in map[string]any) map[string]any {
	data, err := json.Marshal(in)
	if err != nil {
		return map[string]any{}
	}
	var out map[string]any
	if err := json.Unmarshal(data, &out); err != nil {
		return map[string]any{}
	}
	return out
}

// flatten maps every leaf of v to its path: a.b for objects, a[0] for lists; empty
// objects and lists are leaves.
func flatten(v map[string]any) map[string]any {
	out := map[string]any{}
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		switch t := v.(type) {
		case map[string]any:
			if len(t) == 0 {
				out[prefix] = t
				return
			}
			for k, e := range t {
				walk(join(prefix, k), e)
			}
		case []any:
			if len(t) == 0 {
				out[prefix] = t
				return
			}
			for i, e := range t {
				walk(fmt.Sprintf("%s[%d]", prefix, i), e)
			}
		default:
			out[prefix] = v
		}
	}
	for k, e := range v {
		walk(k, e)
	}
	return out
}

func join(prefix, key string) string {
	if prefix == "" {
		return key
	}
	return prefix + "." + key
}

// hasBinding reports whether policy grants role to member without a condition.
func hasBinding(policy *iampb.Policy, role, member string) bool {
	return slices.ContainsFunc(policy.GetBindings(), func(b *iampb.Binding) bool {
		return b.GetRole() == role && b.GetCondition() == nil && slices.Contains(b.GetMembers(), member)
	})
}
