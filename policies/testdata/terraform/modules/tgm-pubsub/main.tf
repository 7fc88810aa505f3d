# A topic with push and pull subscriptions in the shape of terraform-google-modules/pubsub:
# one subscription resource per delivery type, keyed by name, every optional setting a
# dynamic block, dead-letter grants for the Pub/Sub service agent made inside the module.

data "google_project" "project" {
  project_id = var.project_id
}

locals {
  pubsub_agent = "serviceAccount:service-${data.google_project.project.number}@gcp-sa-pubsub.iam.gserviceaccount.com"
  push         = { for s in var.push_subscriptions : s.name => s }
  pull         = { for s in var.pull_subscriptions : s.name => s }
}

resource "google_pubsub_topic" "topic" {
  count   = var.create_topic ? 1 : 0
  project = var.project_id
  name    = var.topic
  labels  = var.topic_labels
}

resource "google_pubsub_subscription" "push_subscriptions" {
  for_each = local.push

  project                    = var.project_id
  name                       = each.key
  topic                      = var.create_topic ? google_pubsub_topic.topic[0].name : var.topic
  labels                     = var.subscription_labels
  ack_deadline_seconds       = coalesce(each.value.ack_deadline_seconds, 10)
  message_retention_duration = each.value.message_retention_duration

  dynamic "expiration_policy" {
    for_each = each.value.expiration_policy != null ? [each.value.expiration_policy] : []
    content {
      ttl = expiration_policy.value
    }
  }

  dynamic "dead_letter_policy" {
    for_each = each.value.dead_letter_topic != null ? [each.value.dead_letter_topic] : []
    content {
      dead_letter_topic     = dead_letter_policy.value
      max_delivery_attempts = each.value.max_delivery_attempts
    }
  }

  dynamic "retry_policy" {
    for_each = each.value.maximum_backoff != null ? [each.value.maximum_backoff] : []
    content {
      maximum_backoff = retry_policy.value
      minimum_backoff = each.value.minimum_backoff
    }
  }

  push_config {
    push_endpoint = each.value.push_endpoint

    dynamic "oidc_token" {
      for_each = each.value.oidc_service_account_email != null ? [each.value.oidc_service_account_email] : []
      content {
        service_account_email = oidc_token.value
        audience              = each.value.audience
      }
    }
  }

  depends_on = [google_pubsub_topic.topic]
}

resource "google_pubsub_subscription" "pull_subscriptions" {
  for_each = local.pull

  project                    = var.project_id
  name                       = each.key
  topic                      = var.create_topic ? google_pubsub_topic.topic[0].name : var.topic
  labels                     = var.subscription_labels
  ack_deadline_seconds       = coalesce(each.value.ack_deadline_seconds, 10)
  message_retention_duration = each.value.message_retention_duration

  dynamic "expiration_policy" {
    for_each = each.value.expiration_policy != null ? [each.value.expiration_policy] : []
    content {
      ttl = expiration_policy.value
    }
  }

  dynamic "dead_letter_policy" {
    for_each = each.value.dead_letter_topic != null ? [each.value.dead_letter_topic] : []
    content {
      dead_letter_topic     = dead_letter_policy.value
      max_delivery_attempts = each.value.max_delivery_attempts
    }
  }

  dynamic "retry_policy" {
    for_each = each.value.maximum_backoff != null ? [each.value.maximum_backoff] : []
    content {
      maximum_backoff = retry_policy.value
      minimum_backoff = each.value.minimum_backoff
    }
  }

  depends_on = [google_pubsub_topic.topic]
}

# Dead-lettering needs the service agent to publish to the dead-letter topic and to
# acknowledge on the source subscription.
resource "google_pubsub_topic_iam_member" "push_topic_binding" {
  for_each = { for k, s in local.push : k => s if s.dead_letter_topic != null }

  project = var.project_id
  topic   = each.value.dead_letter_topic
  role    = "roles/pubsub.publisher"
  member  = local.pubsub_agent
}

resource "google_pubsub_topic_iam_member" "pull_topic_binding" {
  for_each = { for k, s in local.pull : k => s if s.dead_letter_topic != null }

  project = var.project_id
  topic   = each.value.dead_letter_topic
  role    = "roles/pubsub.publisher"
  member  = local.pubsub_agent
}

resource "google_pubsub_subscription_iam_member" "push_subscription_binding" {
  for_each = { for k, s in local.push : k => s if s.dead_letter_topic != null }

  project      = var.project_id
  subscription = each.key
  role         = "roles/pubsub.subscriber"
  member       = local.pubsub_agent

  depends_on = [google_pubsub_subscription.push_subscriptions]
}

resource "google_pubsub_subscription_iam_member" "pull_subscription_binding" {
  for_each = { for k, s in local.pull : k => s if s.dead_letter_topic != null }

  project      = var.project_id
  subscription = each.key
  role         = "roles/pubsub.subscriber"
  member       = local.pubsub_agent

  depends_on = [google_pubsub_subscription.pull_subscriptions]
}
