# for_each topics referenced with literal keys from for_each subscriptions: every
# subscription reads its own topic (each.key) and dead-letters to
# google_pubsub_topic.t["dead-letters"], not to the topic with its own key. One more
# subscription dead-letters into the very topic it reads.

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

resource "google_pubsub_topic" "t" {
  for_each = toset(["orders", "payments", "dead-letters"])
  name     = each.key
}

resource "google_pubsub_subscription" "s" {
  for_each = toset(["orders", "payments"])
  name     = "${each.key}-worker"
  topic    = google_pubsub_topic.t[each.key].id

  dead_letter_policy {
    dead_letter_topic     = google_pubsub_topic.t["dead-letters"].id
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

resource "google_pubsub_subscription" "dead_letters" {
  name  = "dead-letters-hold"
  topic = google_pubsub_topic.t["dead-letters"].name
  expiration_policy {
    ttl = ""
  }
}

resource "google_pubsub_topic_iam_member" "dead_letters_publisher" {
  topic  = google_pubsub_topic.t["dead-letters"].name
  role   = "roles/pubsub.publisher"
  member = local.pubsub_agent
}

resource "google_pubsub_subscription_iam_member" "subscriber" {
  for_each     = google_pubsub_subscription.s
  subscription = each.value.name
  role         = "roles/pubsub.subscriber"
  member       = local.pubsub_agent
}

resource "google_pubsub_subscription" "payments_retry" {
  name  = "payments-retry"
  topic = google_pubsub_topic.t["payments"].id

  dead_letter_policy {
    dead_letter_topic     = google_pubsub_topic.t["payments"].id
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

resource "google_pubsub_subscription_iam_member" "payments_retry" {
  subscription = google_pubsub_subscription.payments_retry.name
  role         = "roles/pubsub.subscriber"
  member       = local.pubsub_agent
}
