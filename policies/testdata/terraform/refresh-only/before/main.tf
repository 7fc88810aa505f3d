# The state the refresh-only plan reads: a subscription without a dead-letter policy.

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

resource "google_pubsub_topic" "orders" {
  name = "orders"
}

resource "google_pubsub_subscription" "orders" {
  name  = "orders-worker"
  topic = google_pubsub_topic.orders.id
}
