# Dead-letter topics handed through a module that plans no resource (a naming or wiring
# module): once as a single call, once as a for_each call. The dead-letter topic is
# created in the same plan, so its ID is known only after apply and only the references
# can link the subscriptions to it. No grant is made for either.

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

resource "google_pubsub_topic" "events" {
  name = "events"
}

resource "google_pubsub_topic" "dlq" {
  name = "events-dlq"
}

module "wiring" {
  source = "../modules/passthrough"
  topic  = google_pubsub_topic.dlq.id
}

module "wiring_each" {
  source   = "../modules/passthrough"
  for_each = toset(["a"])
  topic    = google_pubsub_topic.dlq.id
}

resource "google_pubsub_subscription" "worker" {
  name  = "events-worker"
  topic = google_pubsub_topic.events.id
  labels = {
    eventpipe_role = "consumer"
  }
  dead_letter_policy {
    dead_letter_topic     = module.wiring.topic
    max_delivery_attempts = 5
  }
  retry_policy {
    minimum_backoff = "10s"
    maximum_backoff = "600s"
  }
}

resource "google_pubsub_subscription" "worker_each" {
  name  = "events-worker-each"
  topic = google_pubsub_topic.events.id
  labels = {
    eventpipe_role = "consumer"
  }
  dead_letter_policy {
    dead_letter_topic     = module.wiring_each["a"].topic
    max_delivery_attempts = 5
  }
  retry_policy {
    minimum_backoff = "10s"
    maximum_backoff = "600s"
  }
}

# Keeps the dead-lettered messages; its topic, too, comes through the module.
resource "google_pubsub_subscription" "dlq_hold" {
  name  = "events-dlq-hold"
  topic = module.wiring.topic
  expiration_policy {
    ttl = ""
  }
}
