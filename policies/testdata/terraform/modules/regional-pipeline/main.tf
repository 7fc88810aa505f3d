# One region's event pipeline: a topic and its worker subscription made by the
# fabric-style pubsub module (a nested module), and — when dead_letter is set — a
# dead-letter topic, the subscription that keeps its messages and the service agent's
# publisher grant, made here. Platform teams call it once per region with for_each.

data "google_project" "this" {
  project_id = var.project_id
}

locals {
  pubsub_agent = "serviceAccount:service-${data.google_project.this.number}@gcp-sa-pubsub.iam.gserviceaccount.com"
}

resource "google_pubsub_topic" "dlq" {
  count   = var.dead_letter ? 1 : 0
  project = var.project_id
  name    = "${var.name}-dlq"

  message_storage_policy {
    allowed_persistence_regions = [var.region]
  }
}

resource "google_pubsub_subscription" "dlq_hold" {
  count                      = var.dead_letter ? 1 : 0
  project                    = var.project_id
  name                       = "${var.name}-dlq-hold"
  topic                      = google_pubsub_topic.dlq[0].name
  message_retention_duration = "604800s"

  expiration_policy {
    ttl = ""
  }
}

resource "google_pubsub_topic_iam_member" "dlq_publisher" {
  count   = var.dead_letter ? 1 : 0
  project = var.project_id
  topic   = google_pubsub_topic.dlq[0].id
  role    = "roles/pubsub.publisher"
  member  = local.pubsub_agent
}

module "events" {
  source     = "../fabric-pubsub"
  project_id = var.project_id
  name       = var.name
  regions    = [var.region]
  labels     = { region = var.region }

  subscriptions = {
    "${var.name}-worker" = {
      push = {
        endpoint   = var.push_endpoint
        oidc_token = { service_account_email = var.push_service_account }
      }
      dead_letter_policy = var.dead_letter ? {
        topic                 = google_pubsub_topic.dlq[0].id
        max_delivery_attempts = 5
      } : null
      retry_policy          = { minimum_backoff = 10, maximum_backoff = 600 }
      expiration_policy_ttl = ""
      iam                   = { "roles/pubsub.subscriber" = [local.pubsub_agent] }
    }
  }
}
