# One event trigger in the shape of chainguard's terraform-infra-common cloudevent-trigger:
# a push subscription on the broker topic that delivers matching events to a private
# Cloud Run service, with its own dead-letter topic, a never-expiring subscription that
# keeps the dead letters, the Pub/Sub service agent's grants, and an alert on dead letters.

locals {
  filter = join(" AND ", [for k, v in var.filter : "attributes.ce-${k}=\"${v}\""])
  labels = {
    cloudevent-trigger = var.name
    team               = var.team
  }
}

# The Pub/Sub service agent of the project, created on first use of the API.
resource "google_project_service_identity" "pubsub" {
  provider = google-beta
  project  = var.project_id
  service  = "pubsub.googleapis.com"
}

resource "google_pubsub_topic" "dead-letter" {
  name   = "${var.name}-dlq"
  labels = local.labels

  message_storage_policy {
    allowed_persistence_regions = [var.private-service.region]
  }
}

# The service agent republishes undeliverable events to the dead-letter topic.
resource "google_pubsub_topic_iam_binding" "allow-pubsub-to-send-to-dead-letter" {
  topic   = google_pubsub_topic.dead-letter.name
  role    = "roles/pubsub.publisher"
  members = ["serviceAccount:${google_project_service_identity.pubsub.email}"]
}

# Keeps dead letters: a topic without subscriptions drops what is published to it. It
# never expires, since nothing reads it in steady state.
resource "google_pubsub_subscription" "dead-letter-pull-sub" {
  name                       = google_pubsub_topic.dead-letter.name
  topic                      = google_pubsub_topic.dead-letter.name
  message_retention_duration = "86400s"
  labels                     = local.labels

  expiration_policy {
    ttl = ""
  }
}

resource "google_pubsub_subscription" "this" {
  name   = "${var.name}-sub"
  topic  = var.broker
  labels = local.labels
  filter = local.filter

  ack_deadline_seconds = var.ack_deadline_seconds

  push_config {
    push_endpoint = var.private-service.uri

    oidc_token {
      service_account_email = var.delivery_service_account
    }

    no_wrapper {
      write_metadata = true
    }
  }

  expiration_policy {
    ttl = ""
  }

  dead_letter_policy {
    dead_letter_topic     = google_pubsub_topic.dead-letter.id
    max_delivery_attempts = var.max_delivery_attempts
  }

  retry_policy {
    minimum_backoff = "${var.minimum_backoff}s"
    maximum_backoff = "${var.maximum_backoff}s"
  }
}

# The service agent acknowledges the events it dead-letters on the source subscription.
resource "google_pubsub_subscription_iam_binding" "allow-pubsub-to-ack" {
  subscription = google_pubsub_subscription.this.name
  role         = "roles/pubsub.subscriber"
  members      = ["serviceAccount:${google_project_service_identity.pubsub.email}"]
}

resource "google_cloud_run_v2_service_iam_member" "delivery-invoker" {
  project  = var.project_id
  location = var.private-service.region
  name     = var.private-service.name
  role     = "roles/run.invoker"
  member   = "serviceAccount:${var.delivery_service_account}"
}

# A dead-lettered event will never be redelivered: say so.
resource "google_monitoring_alert_policy" "dead-letter" {
  count = var.alert_on_dead_letter ? 1 : 0

  display_name = "Dead-lettered events: ${var.name}"
  combiner     = "OR"
  severity     = "WARNING"

  conditions {
    display_name = "Dead-lettered events: ${var.name}"

    condition_threshold {
      filter          = "resource.type = \"pubsub_subscription\" AND metric.type = \"pubsub.googleapis.com/subscription/dead_letter_message_count\" AND resource.label.\"subscription_id\" = \"${google_pubsub_subscription.this.name}\""
      comparison      = "COMPARISON_GT"
      threshold_value = 0
      duration        = "0s"

      aggregations {
        alignment_period   = "300s"
        per_series_aligner = "ALIGN_DELTA"
      }

      trigger {
        count = 1
      }
    }
  }

  alert_strategy {
    auto_close = "604800s"
  }

  notification_channels = var.notification_channels
}
