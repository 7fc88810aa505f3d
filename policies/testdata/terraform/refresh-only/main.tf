# Planned with -refresh-only (plan-args) on the state of before/: no change is planned.

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
