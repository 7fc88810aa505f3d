# The change under review, planned against the state of applying before/: the orders
# worker's filter changes (replaced: delete, then create), the events topic moves to a
# new name and its worker follows (replaced the other way round: create_before_destroy),
# the dead-letter subscription gets a new address (a moved block) and keeps messages for a
# shorter time (updated), the legacy
# audit subscription goes (deleted), a data source waits for the apply (read), and the
# rest stays as it is (no-op).

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

locals {
  pubsub_agent = "serviceAccount:service-${data.google_project.this.number}@gcp-sa-pubsub.iam.gserviceaccount.com"
}

resource "google_pubsub_topic" "orders" {
  name = "orders"
}

resource "google_pubsub_topic" "orders_dlq" {
  name = "orders-dlq"
}

resource "google_pubsub_topic_iam_member" "orders_dlq_publisher" {
  topic  = google_pubsub_topic.orders_dlq.name
  role   = "roles/pubsub.publisher"
  member = local.pubsub_agent
}

resource "google_pubsub_topic" "events" {
  name = "events-v2"

  lifecycle {
    create_before_destroy = true
  }
}

resource "google_pubsub_subscription" "orders_worker" {
  name   = "orders-worker"
  topic  = google_pubsub_topic.orders.id
  filter = "attributes.kind = \"order\" AND attributes.region = \"eu\""

  dead_letter_policy {
    dead_letter_topic     = google_pubsub_topic.orders_dlq.id
    max_delivery_attempts = 5
  }
  retry_policy {
    minimum_backoff = "10s"
    maximum_backoff = "600s"
  }
  expiration_policy {
    ttl = ""
  }
}

resource "google_pubsub_subscription" "events_worker" {
  name  = "events-v2-worker"
  topic = google_pubsub_topic.events.id

  dead_letter_policy {
    dead_letter_topic     = google_pubsub_topic.orders_dlq.id
    max_delivery_attempts = 5
  }
  expiration_policy {
    ttl = ""
  }
}

moved {
  from = google_pubsub_subscription.orders_dlq_hold
  to   = google_pubsub_subscription.dlq_hold
}

resource "google_pubsub_subscription" "dlq_hold" {
  name                       = "orders-dlq-hold"
  topic                      = google_pubsub_topic.orders_dlq.id
  message_retention_duration = "259200s"
  expiration_policy {
    ttl = ""
  }
}

resource "google_pubsub_subscription_iam_member" "subscriber" {
  for_each = {
    orders = google_pubsub_subscription.orders_worker.name
    events = google_pubsub_subscription.events_worker.name
  }
  subscription = each.value
  role         = "roles/pubsub.subscriber"
  member       = local.pubsub_agent
}

data "google_project" "after_apply" {
  depends_on = [google_pubsub_subscription.orders_worker]
}

output "project_number" {
  value = data.google_project.after_apply.number
}
