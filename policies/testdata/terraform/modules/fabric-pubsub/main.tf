# A topic with map-keyed subscriptions and IAM maps, in the shape of
# cloud-foundation-fabric's pubsub module: every optional subscription setting is a
# dynamic block, IAM is authoritative per role (topic_iam_binding), and the topic id
# output is built from the inputs, so it is known while planning.

locals {
  topic_id = "projects/${var.project_id}/topics/${var.name}"
  subscription_iam = merge([
    for name, s in var.subscriptions : {
      for role, members in s.iam : "${name}.${role}" => {
        subscription = name
        role         = role
        members      = members
      }
    }
  ]...)
}

resource "google_pubsub_topic" "default" {
  project                    = var.project_id
  name                       = var.name
  labels                     = var.labels
  message_retention_duration = var.message_retention_duration

  dynamic "message_storage_policy" {
    for_each = length(var.regions) > 0 ? [var.regions] : []
    content {
      allowed_persistence_regions = message_storage_policy.value
    }
  }
}

resource "google_pubsub_subscription" "default" {
  for_each = var.subscriptions

  project                    = var.project_id
  name                       = each.key
  topic                      = google_pubsub_topic.default.id
  labels                     = coalesce(each.value.labels, var.labels)
  ack_deadline_seconds       = each.value.ack_deadline_seconds
  message_retention_duration = each.value.message_retention_duration
  filter                     = each.value.filter

  dynamic "dead_letter_policy" {
    for_each = each.value.dead_letter_policy == null ? [] : [""]
    content {
      dead_letter_topic     = each.value.dead_letter_policy.topic
      max_delivery_attempts = each.value.dead_letter_policy.max_delivery_attempts
    }
  }

  dynamic "expiration_policy" {
    for_each = each.value.expiration_policy_ttl == null ? [] : [""]
    content {
      ttl = each.value.expiration_policy_ttl
    }
  }

  dynamic "push_config" {
    for_each = each.value.push == null ? [] : [""]
    content {
      push_endpoint = each.value.push.endpoint
      dynamic "oidc_token" {
        for_each = each.value.push.oidc_token == null ? [] : [""]
        content {
          service_account_email = each.value.push.oidc_token.service_account_email
          audience              = each.value.push.oidc_token.audience
        }
      }
    }
  }

  dynamic "retry_policy" {
    for_each = each.value.retry_policy == null ? [] : [""]
    content {
      minimum_backoff = each.value.retry_policy.minimum_backoff == null ? null : "${each.value.retry_policy.minimum_backoff}s"
      maximum_backoff = each.value.retry_policy.maximum_backoff == null ? null : "${each.value.retry_policy.maximum_backoff}s"
    }
  }
}

resource "google_pubsub_topic_iam_binding" "authoritative" {
  for_each = var.iam

  project = var.project_id
  topic   = google_pubsub_topic.default.id
  role    = each.key
  members = each.value
}

resource "google_pubsub_topic_iam_member" "bindings" {
  for_each = var.iam_bindings_additive

  project = var.project_id
  topic   = google_pubsub_topic.default.id
  role    = each.value.role
  member  = each.value.member
}

resource "google_pubsub_subscription_iam_binding" "authoritative" {
  for_each = local.subscription_iam

  project      = var.project_id
  subscription = google_pubsub_subscription.default[each.value.subscription].id
  role         = each.value.role
  members      = each.value.members
}
