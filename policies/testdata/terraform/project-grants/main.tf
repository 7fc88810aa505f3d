# The Pub/Sub service agent granted publisher and subscriber once for the whole project
# (google_project_iam_member) instead of on each dead-letter topic and subscription.

terraform {
  required_providers {
    google = {
      source  = "hashicorp/google"
      version = ">= 7.0, < 8.0"
    }
  }
}

provider "google" {
  project = "acme-prod"
  region  = "europe-west1"
}

data "google_project" "this" {}

resource "google_project_iam_member" "pubsub_agent" {
  for_each = toset(["roles/pubsub.publisher", "roles/pubsub.subscriber"])
  project  = data.google_project.this.project_id
  role     = each.key
  member   = "serviceAccount:service-${data.google_project.this.number}@gcp-sa-pubsub.iam.gserviceaccount.com"
}

resource "google_pubsub_topic" "audit" {
  name = "audit-events"
}

resource "google_pubsub_topic" "audit_dlq" {
  name = "audit-events-dlq"
}

resource "google_pubsub_subscription" "audit" {
  for_each = toset(["siem", "archive"])
  name     = "audit-events-${each.key}"
  topic    = google_pubsub_topic.audit.id

  dead_letter_policy {
    dead_letter_topic     = google_pubsub_topic.audit_dlq.id
    max_delivery_attempts = 10
  }
  retry_policy {
    minimum_backoff = "20s"
    maximum_backoff = "600s"
  }
  expiration_policy {
    ttl = ""
  }
}

resource "google_pubsub_subscription" "audit_dlq_hold" {
  name                       = "audit-events-dlq-hold"
  topic                      = google_pubsub_topic.audit_dlq.id
  message_retention_duration = "432000s"
  expiration_policy {
    ttl = ""
  }
}
