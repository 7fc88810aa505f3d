package benchgen

import (
	"encoding/json"
	"fmt"
)

// The for_each benchmark: pipelines declared the way teams write a Terraform module, and
// the same resources as a Pulumi preview, so the two documents' checks compare per
// resource. The module (ForEachModule) is called with for_each, one instance per shard;
// inside, every resource has for_each over the shard's pipelines and names the others by
// the pipeline's key (google_pubsub_topic.dlq[each.key].id), the dead-letter
// subscriptions and grants iterate the resources they attach to (for_each =
// google_pubsub_topic.dlq, topic = each.value.id). GenerateForEachTerraform writes the
// plan as `terraform show -json` prints it: resource_changes with module_address, index
// and the after, after_unknown and after_sensitive the google provider plans (the
// stand-in's, internal/testing/tfprovider: ids and a new subscription's topic known only
// after apply), planned_values with every module instance, configuration with the module
// call and its resources' expressions, and the root variables.

// ForEachModule is the module the plan is of (its configuration: what
// GenerateForEachTerraform writes under configuration).
const ForEachModule = `variable "shard" {
  type = string
}

variable "agent" {
  type = string
}

variable "pipelines" {
  type = map(object({
    dead_letter           = optional(bool, true)
    max_delivery_attempts = optional(number, 5)
  }))
}

locals {
  dead_lettered = { for k, v in var.pipelines : k => v if v.dead_letter }
  plain         = { for k, v in var.pipelines : k => v if !v.dead_letter }
}

resource "google_pubsub_topic" "main" {
  for_each = var.pipelines
  name     = "${var.shard}-${each.key}"
}

resource "google_pubsub_topic" "dlq" {
  for_each = local.dead_lettered
  name     = "${var.shard}-${each.key}-dlq"
}

resource "google_pubsub_subscription" "main" {
  for_each = local.dead_lettered
  name     = "${var.shard}-${each.key}"
  topic    = google_pubsub_topic.main[each.key].id
  dead_letter_policy {
    dead_letter_topic     = google_pubsub_topic.dlq[each.key].id
    max_delivery_attempts = each.value.max_delivery_attempts
  }
  retry_policy {
    minimum_backoff = "10s"
    maximum_backoff = "600s"
  }
  expiration_policy {
    ttl = ""
  }
}

resource "google_pubsub_subscription" "plain" {
  for_each = local.plain
  name     = "${var.shard}-${each.key}"
  topic    = google_pubsub_topic.main[each.key].id
  retry_policy {
    minimum_backoff = "10s"
    maximum_backoff = "600s"
  }
  expiration_policy {
    ttl = ""
  }
}

resource "google_pubsub_subscription" "dlq" {
  for_each                   = google_pubsub_topic.dlq
  name                       = "${each.value.name}-hold"
  topic                      = each.value.id
  message_retention_duration = "604800s"
  expiration_policy {
    ttl = ""
  }
}

resource "google_pubsub_topic_iam_member" "dlq_publisher" {
  for_each = google_pubsub_topic.dlq
  topic    = each.value.name
  role     = "roles/pubsub.publisher"
  member   = var.agent
}

resource "google_pubsub_subscription_iam_member" "subscriber" {
  for_each     = google_pubsub_subscription.main
  subscription = each.value.name
  role         = "roles/pubsub.subscriber"
  member       = var.agent
}
`

// forEachShardSize is how many pipelines each module instance (shard) holds.
const forEachShardSize = 100

const benchProject = "bench"

const benchAgent = "serviceAccount:service-123456789012@gcp-sa-pubsub.iam.gserviceaccount.com"

// forEachResource is one planned resource instance of the for_each plan.
type forEachResource struct {
	shard, typ, name, key string
	// values are the planned values (Terraform's attribute names); unknown the attributes
	// known only after apply (after_unknown); links name, by attribute, the resource
	// (type.name, same shard and key) it refers to.
	values  map[string]any
	unknown map[string]any
	links   map[string]string
	// plain: the pipeline does not dead-letter.
	plain bool
}

func (r forEachResource) module() string { return fmt.Sprintf("module.pipelines[%q]", r.shard) }

func (r forEachResource) address() string {
	return fmt.Sprintf("%s.%s.%s[%q]", r.module(), r.typ, r.name, r.key)
}

// ForEachPipelines is how many pipelines a for_each document of about n changes holds:
// a pipeline is 6 resources (topic, dead-letter topic, subscription, DLQ subscription,
// publisher and subscriber grants), every tenth without dead-lettering 2 (topic,
// subscription).
func ForEachPipelines(n int) int { return n * 10 / 56 }

// forEachResources are the resources of the for_each documents of about n changes.
func forEachResources(n int) ([]forEachResource, error) {
	pipelines := ForEachPipelines(n)
	if pipelines < 10 {
		return nil, fmt.Errorf("a for_each plan of %d changes: generate at least 10 pipelines (56 changes)", n)
	}
	retry := []any{map[string]any{"minimum_backoff": "10s", "maximum_backoff": "600s"}}
	never := []any{map[string]any{"ttl": ""}}
	var out []forEachResource
	for i := range pipelines {
		shard, key := fmt.Sprintf("s%03d", i/forEachShardSize), fmt.Sprintf("p%05d", i)
		name := shard + "-" + key
		add := func(typ, res string, values, unknown map[string]any, links map[string]string) {
			out = append(out, forEachResource{shard: shard, typ: typ, name: res, key: key, values: values, unknown: unknown, links: links, plain: i%10 == 0})
		}
		add("google_pubsub_topic", "main", topicValues(name), topicUnknown(), nil)
		if i%10 == 0 {
			add("google_pubsub_subscription", "plain", subscriptionValues(name, nil, retry, never, "604800s"),
				subscriptionUnknown(false), map[string]string{"topic": "google_pubsub_topic.main"})
			continue
		}
		dlq := name + "-dlq"
		add("google_pubsub_topic", "dlq", topicValues(dlq), topicUnknown(), nil)
		add("google_pubsub_subscription", "main", subscriptionValues(name, []any{map[string]any{"max_delivery_attempts": 5}}, retry, never, "604800s"),
			subscriptionUnknown(true), map[string]string{"topic": "google_pubsub_topic.main", "dead_letter_policy": "google_pubsub_topic.dlq"})
		add("google_pubsub_subscription", "dlq", subscriptionValues(dlq+"-hold", []any{}, []any{}, never, "604800s"),
			subscriptionUnknown(false), map[string]string{"topic": "google_pubsub_topic.dlq"})
		add("google_pubsub_topic_iam_member", "dlq_publisher", map[string]any{"condition": []any{}, "member": benchAgent, "role": "roles/pubsub.publisher", "topic": dlq},
			map[string]any{"condition": []any{}, "etag": true, "id": true, "project": true}, map[string]string{"topic": "google_pubsub_topic.dlq"})
		add("google_pubsub_subscription_iam_member", "subscriber", map[string]any{"condition": []any{}, "member": benchAgent, "role": "roles/pubsub.subscriber", "subscription": name},
			map[string]any{"condition": []any{}, "etag": true, "id": true, "project": true}, map[string]string{"subscription": "google_pubsub_subscription.main"})
	}
	return out, nil
}

func topicValues(name string) map[string]any {
	return map[string]any{
		"deletion_policy": "DELETE", "effective_labels": map[string]any{"goog-terraform-provisioned": "true"},
		"ingestion_data_source_settings": []any{}, "kms_key_name": nil, "labels": nil, "message_retention_duration": nil,
		"message_transforms": []any{}, "name": name, "project": benchProject, "schema_settings": []any{}, "tags": nil,
		"terraform_labels": map[string]any{"goog-terraform-provisioned": "true"}, "timeouts": nil,
	}
}

func topicUnknown() map[string]any {
	return map[string]any{"effective_labels": map[string]any{}, "id": true, "ingestion_data_source_settings": []any{},
		"message_storage_policy": true, "message_transforms": []any{}, "schema_settings": []any{}, "terraform_labels": map[string]any{}}
}

func subscriptionValues(name string, dlq, retry, expiration []any, retention string) map[string]any {
	if dlq == nil {
		dlq = []any{}
	}
	return map[string]any{
		"bigquery_config": []any{}, "cloud_storage_config": []any{}, "dead_letter_policy": dlq, "deletion_policy": "DELETE",
		"effective_labels": map[string]any{"goog-terraform-provisioned": "true"}, "enable_exactly_once_delivery": nil,
		"enable_message_ordering": nil, "expiration_policy": expiration, "filter": nil, "labels": nil,
		"message_retention_duration": retention, "message_transforms": []any{}, "name": name, "project": benchProject,
		"push_config": []any{}, "retain_acked_messages": nil, "retry_policy": retry, "tags": nil,
		"terraform_labels": map[string]any{"goog-terraform-provisioned": "true"}, "timeouts": nil,
	}
}

func subscriptionUnknown(deadLetters bool) map[string]any {
	dlq := []any{}
	if deadLetters {
		dlq = []any{map[string]any{"dead_letter_topic": true}}
	}
	return map[string]any{"ack_deadline_seconds": true, "bigquery_config": []any{}, "cloud_storage_config": []any{},
		"dead_letter_policy": dlq, "effective_labels": map[string]any{}, "expiration_policy": []any{map[string]any{}}, "id": true,
		"labels": map[string]any{}, "message_transforms": []any{}, "push_config": []any{}, "retry_policy": []any{}, "terraform_labels": map[string]any{},
		"topic": true}
}

// sensitiveShape is after_sensitive: the value's lists and maps, empty, without scalars.
func sensitiveShape(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range t {
			if s := sensitiveShape(e); s != nil {
				out[k] = s
			}
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			s := sensitiveShape(e)
			if s == nil {
				s = false
			}
			out[i] = s
		}
		return out
	}
	return nil
}

// GenerateForEachTerraform returns the for_each plan of about n changes (see the file's
// doc): every resource created.
func GenerateForEachTerraform(n int) ([]byte, error) {
	resources, err := forEachResources(n)
	if err != nil {
		return nil, err
	}
	var changes []any
	planned := map[string][]any{}
	var shards []string
	pipelines := map[string]any{}
	for _, r := range resources {
		if _, ok := planned[r.module()]; !ok {
			shards = append(shards, r.shard)
		}
		after := map[string]any{}
		for k, v := range r.values {
			if r.unknown[k] == true {
				continue
			}
			after[k] = v
		}
		if r.typ == "google_pubsub_subscription" {
			if dl, ok := after["dead_letter_policy"].([]any); ok && len(dl) > 0 {
				after["dead_letter_policy"] = []any{map[string]any{"max_delivery_attempts": 5}}
			}
		}
		sensitive := sensitiveShape(after)
		changes = append(changes, map[string]any{
			"address": r.address(), "module_address": r.module(), "mode": "managed", "type": r.typ, "name": r.name, "index": r.key,
			"provider_name": "registry.terraform.io/hashicorp/google",
			"change": map[string]any{"actions": []any{"create"}, "before": nil, "after": after, "after_unknown": r.unknown,
				"before_sensitive": false, "after_sensitive": sensitive},
		})
		planned[r.module()] = append(planned[r.module()], map[string]any{
			"address": r.address(), "mode": "managed", "type": r.typ, "name": r.name, "index": r.key,
			"provider_name": "registry.terraform.io/hashicorp/google", "schema_version": 0, "values": after, "sensitive_values": sensitive,
		})
		if r.typ == "google_pubsub_topic" && r.name == "main" {
			settings := map[string]any{}
			if r.plain {
				settings["dead_letter"] = false
			}
			shardPipes, _ := pipelines[r.shard].(map[string]any)
			if shardPipes == nil {
				shardPipes = map[string]any{}
				pipelines[r.shard] = shardPipes
			}
			shardPipes[r.key] = settings
		}
	}
	var children []any
	for _, s := range shards {
		m := fmt.Sprintf("module.pipelines[%q]", s)
		children = append(children, map[string]any{"address": m, "resources": planned[m]})
	}
	return json.MarshalIndent(map[string]any{
		"format_version": "1.2", "terraform_version": "1.5.7",
		"variables":        map[string]any{"shards": map[string]any{"value": pipelines}},
		"planned_values":   map[string]any{"root_module": map[string]any{"child_modules": children}},
		"resource_changes": changes,
		"configuration": map[string]any{
			"provider_config": map[string]any{"google": map[string]any{"name": "google", "full_name": "registry.terraform.io/hashicorp/google",
				"expressions": map[string]any{"project": map[string]any{"constant_value": benchProject}}}},
			"root_module": map[string]any{
				"variables": map[string]any{"shards": map[string]any{}},
				"module_calls": map[string]any{"pipelines": map[string]any{
					"source":              "./modules/pipelines",
					"for_each_expression": refs("var.shards"),
					"expressions": map[string]any{
						"shard": refs("each.key"), "pipelines": refs("each.value"),
						"agent": map[string]any{"constant_value": benchAgent},
					},
					"module": forEachModuleConfig(),
				}},
			},
		},
	}, "", " ")
}

func refs(r ...string) map[string]any {
	l := make([]any, len(r))
	for i, s := range r {
		l[i] = s
	}
	return map[string]any{"references": l}
}

// forEachModuleConfig is ForEachModule as `terraform show -json` writes its configuration.
func forEachModuleConfig() map[string]any {
	res := func(typ, name string, forEach map[string]any, exprs map[string]any) map[string]any {
		return map[string]any{"address": typ + "." + name, "mode": "managed", "type": typ, "name": name,
			"provider_config_key": "google", "expressions": exprs, "for_each_expression": forEach, "schema_version": 0}
	}
	retry := []any{map[string]any{"minimum_backoff": map[string]any{"constant_value": "10s"}, "maximum_backoff": map[string]any{"constant_value": "600s"}}}
	never := []any{map[string]any{"ttl": map[string]any{"constant_value": ""}}}
	keyed := func(resource string) map[string]any { return refs(resource, "each.key") }
	return map[string]any{
		"variables": map[string]any{"shard": map[string]any{}, "agent": map[string]any{}, "pipelines": map[string]any{}},
		"resources": []any{
			res("google_pubsub_topic", "main", refs("var.pipelines"), map[string]any{"name": refs("var.shard", "each.key")}),
			res("google_pubsub_topic", "dlq", refs("local.dead_lettered"), map[string]any{"name": refs("var.shard", "each.key")}),
			res("google_pubsub_subscription", "main", refs("local.dead_lettered"), map[string]any{
				"name": refs("var.shard", "each.key"), "topic": keyed("google_pubsub_topic.main"),
				"dead_letter_policy": []any{map[string]any{"dead_letter_topic": keyed("google_pubsub_topic.dlq"),
					"max_delivery_attempts": refs("each.value.max_delivery_attempts", "each.value")}},
				"retry_policy": retry, "expiration_policy": never,
			}),
			res("google_pubsub_subscription", "plain", refs("local.plain"), map[string]any{
				"name": refs("var.shard", "each.key"), "topic": keyed("google_pubsub_topic.main"),
				"retry_policy": retry, "expiration_policy": never,
			}),
			res("google_pubsub_subscription", "dlq", refs("google_pubsub_topic.dlq"), map[string]any{
				"name": refs("each.value.name", "each.value"), "topic": refs("each.value.id", "each.value"),
				"message_retention_duration": map[string]any{"constant_value": "604800s"}, "expiration_policy": never,
			}),
			res("google_pubsub_topic_iam_member", "dlq_publisher", refs("google_pubsub_topic.dlq"), map[string]any{
				"topic": refs("each.value.name", "each.value"), "role": map[string]any{"constant_value": "roles/pubsub.publisher"},
				"member": refs("var.agent"),
			}),
			res("google_pubsub_subscription_iam_member", "subscriber", refs("google_pubsub_subscription.main"), map[string]any{
				"subscription": refs("each.value.name", "each.value"), "role": map[string]any{"constant_value": "roles/pubsub.subscriber"},
				"member": refs("var.agent"),
			}),
		},
	}
}

// GenerateForEachPreview returns the for_each plan's resources as `pulumi preview --json`
// prints them when they are created: pulumi-gcp's types and inputs, links as
// propertyDependencies, ids known only after the update.
func GenerateForEachPreview(n int) ([]byte, error) {
	resources, err := forEachResources(n)
	if err != nil {
		return nil, err
	}
	urn := func(r forEachResource) string {
		return "urn:pulumi:bench::eventpipe::" + previewTypes[r.typ] + "::" + r.shard + "-" + r.name + "-" + r.key
	}
	byLink := map[string]forEachResource{}
	for _, r := range resources {
		byLink[r.shard+"|"+r.typ+"."+r.name+"|"+r.key] = r
	}
	steps := []step{{Op: "same", URN: "urn:pulumi:bench::eventpipe::pulumi:pulumi:Stack::eventpipe-bench",
		NewState: map[string]any{"type": "pulumi:pulumi:Stack", "custom": false}}}
	for _, r := range resources {
		inputs := pulumiInputs(r.values)
		pd := map[string][]string{}
		var deps []string
		for attr, target := range r.links {
			u := urn(byLink[r.shard+"|"+target+"|"+r.key])
			prop := camel(attr)
			pd[prop] = []string{u}
			deps = append(deps, u)
			switch prop {
			case "deadLetterPolicy":
				inputs["deadLetterPolicy"] = map[string]any{"deadLetterTopic": unknown, "maxDeliveryAttempts": 5}
			case "topic":
				if r.typ == "google_pubsub_subscription" {
					inputs["topic"] = unknown
				}
			}
		}
		steps = append(steps, step{Op: "create", URN: urn(r), NewState: map[string]any{
			"urn": urn(r), "type": previewTypes[r.typ], "custom": true, "inputs": inputs,
			"dependencies": deps, "propertyDependencies": pd,
		}})
	}
	return json.MarshalIndent(map[string]any{
		"config": map[string]any{}, "steps": steps, "diagnostics": []any{},
		"changeSummary": map[string]any{"create": len(resources), "same": 1},
	}, "", "  ")
}

var previewTypes = map[string]string{
	"google_pubsub_topic":                   "gcp:pubsub/topic:Topic",
	"google_pubsub_subscription":            "gcp:pubsub/subscription:Subscription",
	"google_pubsub_topic_iam_member":        "gcp:pubsub/topicIAMMember:TopicIAMMember",
	"google_pubsub_subscription_iam_member": "gcp:pubsub/subscriptionIAMMember:SubscriptionIAMMember",
}

// pulumiInputs are Terraform values as pulumi-gcp inputs: camelCase names, one-element
// block lists as objects, empty blocks and nulls left out, no provider-computed labels.
func pulumiInputs(values map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range values {
		if k == "effective_labels" || k == "terraform_labels" || k == "deletion_policy" {
			continue
		}
		switch t := v.(type) {
		case nil:
			continue
		case []any:
			if len(t) == 0 {
				continue
			}
			if m, ok := t[0].(map[string]any); ok {
				out[camel(k)] = pulumiInputs(m)
				continue
			}
		}
		out[camel(k)] = v
	}
	return out
}

// camel converts snake_case to camelCase.
func camel(s string) string {
	out := []byte{}
	up := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '_' {
			up = true
			continue
		}
		if up && c >= 'a' && c <= 'z' {
			c -= 'a' - 'A'
		}
		up = false
		out = append(out, c)
	}
	return string(out)
}
