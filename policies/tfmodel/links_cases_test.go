package tfmodel

import (
	"fmt"
	"strings"
	"testing"
)

// Plans built by code for what neither the real-CLI plans nor the edit generator reach
// often: module trees deeper than the model reads, keyed instances whose module_address
// disagrees with their address, for_each expressions that are false or null, module
// instances named by key, and scopes of modules the plan does not know.

func refs(r ...any) map[string]any { return map[string]any{"references": r} }

// tfChange is a planned change creating type.name+key in module mi, with after_unknown.
func tfChange(mi, typ, name, key string, afterUnknown map[string]any) map[string]any {
	rc := map[string]any{
		"address": prefixed(mi, typ+"."+name+key), "mode": "managed", "type": typ, "name": name,
		"change": map[string]any{"actions": []any{"create"}, "after": map[string]any{}, "after_unknown": afterUnknown},
	}
	if mi != "" {
		rc["module_address"] = mi
	}
	return rc
}

func tfResource(typ, name string, exprs map[string]any) map[string]any {
	return map[string]any{"address": typ + "." + name, "mode": "managed", "type": typ, "name": name, "expressions": exprs}
}

func tfPlan(changes []any, root map[string]any) map[string]any {
	return map[string]any{
		"format_version": "1.2", "resource_changes": changes,
		"configuration": map[string]any{"root_module": root},
	}
}

const (
	sub   = "google_pubsub_subscription"
	topic = "google_pubsub_topic"
)

var unknownTopic = map[string]any{"topic": true}

// deepModulePlan nests module "m" depth times below the root; at each level a topic and
// a subscription whose topic is, by level, the caller's topic (var.topic), the level's own
// topic, the child's output, a local value or a dynamic block (no expression).
func deepModulePlan(depth int) map[string]any {
	var changes []any
	root := map[string]any{"resources": []any{tfResource(topic, "root", nil)}}
	changes = append(changes, tfChange("", topic, "root", "", nil))
	config, mi := root, ""
	caller := refs("google_pubsub_topic.root.id", "google_pubsub_topic.root")
	for level := 1; level <= depth; level++ {
		module := map[string]any{"variables": map[string]any{"topic": map[string]any{}}}
		config["module_calls"] = map[string]any{"m": map[string]any{"expressions": map[string]any{"topic": caller}, "module": module}}
		mi = prefixed(mi, "module.m")
		expr := []map[string]any{
			refs("var.topic"),
			refs("google_pubsub_topic.t.id", "google_pubsub_topic.t"),
			refs("module.m.topic_id", "module.m"),
			refs("local.topic"),
			nil,
		}[level%5]
		exprs := map[string]any{}
		if expr != nil {
			exprs["topic"] = expr
		}
		module["resources"] = []any{tfResource(topic, "t", nil), tfResource(sub, "s", exprs)}
		module["outputs"] = map[string]any{"topic_id": map[string]any{"expression": refs("google_pubsub_topic.t.id", "google_pubsub_topic.t")}}
		changes = append(changes, tfChange(mi, topic, "t", "", nil), tfChange(mi, sub, "s", "", unknownTopic))
		config, caller = module, refs("var.topic")
	}
	return tfPlan(changes, root)
}

func TestLinksMatchRegoThroughDeepModules(t *testing.T) {
	for depth := 1; depth <= maxModuleDepth+2; depth++ {
		t.Run(fmt.Sprint(depth), func(t *testing.T) {
			checkLinkParity(t, deepModulePlan(depth))
		})
	}
}

func TestLinksMatchRegoOnBuiltCases(t *testing.T) {
	keyedTopics := []any{tfChange("", topic, "t", `["a"]`, nil), tfChange("", topic, "t", `["b"]`, nil)}
	withEach := func(forEach any, topicRefs ...any) map[string]any {
		s := tfResource(sub, "s", map[string]any{"topic": refs(topicRefs...)})
		s["for_each_expression"] = forEach
		return tfPlan(append(cloneList(keyedTopics), tfChange("", sub, "s", `["a"]`, unknownTopic)),
			map[string]any{"resources": []any{tfResource(topic, "t", nil), s}})
	}
	moved := tfChange("module.other", topic, "t", `["a"]`, nil)
	moved["address"] = `google_pubsub_topic.t["a"]`
	counted := func(topicRefs ...any) map[string]any {
		unit := map[string]any{
			"resources": []any{tfResource(topic, "t", nil)},
			"outputs":   map[string]any{"id": map[string]any{"expression": refs("google_pubsub_topic.t.id", "google_pubsub_topic.t")}, "name": map[string]any{}},
		}
		return tfPlan([]any{
			tfChange("module.m[0]", topic, "t", "", nil), tfChange("module.m[1]", topic, "t", "", nil),
			tfChange("", sub, "s", "", unknownTopic),
		}, map[string]any{
			"resources":    []any{tfResource(sub, "s", map[string]any{"topic": refs(topicRefs...)})},
			"module_calls": map[string]any{"m": map[string]any{"count_expression": map[string]any{"constant_value": 2}, "module": unit}},
		})
	}
	dlq := func(block any, afterUnknown map[string]any) map[string]any {
		return tfPlan([]any{tfChange("", topic, "d", "", nil), tfChange("", sub, "s", "", afterUnknown)},
			map[string]any{"resources": []any{tfResource(topic, "d", nil), tfResource(sub, "s", map[string]any{"dead_letter_policy": block})}})
	}
	cases := map[string]map[string]any{
		"for_each false, each.value":         withEach(false, "each.value"),
		"for_each null, each.value":          withEach(nil, "each.value"),
		"for_each keyed refs, each.value":    withEach(refs(`google_pubsub_topic.t["a"]`), "each.value"),
		"keyed and whole references":         withEach(false, `google_pubsub_topic.t["a"]`, "google_pubsub_topic.t", "google_pubsub_topic.t", "var.x"),
		"keyed reference to a missing key":   withEach(false, `google_pubsub_topic.t["z"]`, "google_pubsub_topic.t", "local.x"),
		"keyed reference, instance moved":    tfPlan([]any{moved, tfChange("", sub, "s", "", unknownTopic)}, map[string]any{"resources": []any{tfResource(sub, "s", map[string]any{"topic": refs(`google_pubsub_topic.t["a"]`, "google_pubsub_topic.t", "data.x.y")})}}),
		"module instance output":             counted("module.m[0].id", "module.m[0]", "module.m"),
		"module instance, whole":             counted("module.m[1]", "module.m"),
		"module, every instance's output":    counted("module.m.id", "module.m"),
		"module, whole":                      counted("module.m"),
		"module instance the plan lacks":     counted(`module.m["x"].id`, `module.m["x"]`, "module.m"),
		"module instance without outputs":    counted("module.m[0].name", "module.m[0]", "module.m"),
		"dead_letter_policy as an object":    dlq(map[string]any{"dead_letter_topic": refs("google_pubsub_topic.d.id", "google_pubsub_topic.d")}, nil),
		"dead_letter_policy empty, unknown":  dlq([]any{}, map[string]any{"dead_letter_policy": map[string]any{"0": map[string]any{"dead_letter_topic": true}}}),
		"dead_letter_policy local, unknown":  dlq([]any{map[string]any{"dead_letter_topic": refs("local.d")}}, map[string]any{"dead_letter_policy": []any{map[string]any{"dead_letter_topic": true}}}),
		"dead_letter_policy local, known":    dlq([]any{map[string]any{"dead_letter_topic": refs("local.d")}}, nil),
		"dead_letter_policy constant":        dlq([]any{map[string]any{"dead_letter_topic": map[string]any{"constant_value": "x"}}}, nil),
		"unknown scope of an unknown module": tfPlan([]any{tfChange("weird", sub, "s", "", unknownTopic)}, map[string]any{}),
		"references not strings":             dlq([]any{map[string]any{"dead_letter_topic": refs(1, "google_pubsub_topic.d")}}, map[string]any{"dead_letter_policy": []any{map[string]any{"dead_letter_topic": true}}}),
	}
	for name, doc := range cases {
		t.Run(strings.ReplaceAll(name, " ", "_"), func(t *testing.T) {
			checkLinkParity(t, doc)
		})
	}
}

func cloneList(s []any) []any { return append([]any(nil), s...) }
