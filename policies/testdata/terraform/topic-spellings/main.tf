# References written as literal strings, the topic sometimes by name ("orders") and
# sometimes by path ("projects/acme-prod/topics/orders"): each spelling names the same
# topic. One subscription dead-letters into the topic it reads, spelled the other way.

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

locals {
  pubsub_agent = "serviceAccount:service-412151981223@gcp-sa-pubsub.iam.gserviceaccount.com"
}

resource "google_pubsub_topic" "orders" {
  name = "orders"
}

resource "google_pubsub_topic" "orders_dlq" {
  name = "orders-dlq"
}

resource "google_pubsub_subscription" "orders_worker" {
  name  = "orders-worker"
  topic = "orders"

  dead_letter_policy {
    dead_letter_topic     = "projects/acme-prod/topics/orders-dlq"
    max_delivery_attempts = 5
  }
  retry_policy {
    minimum_backoff = "10s"
    maximum_backoff = "600s"
  }
  expiration_policy {
    ttl = ""
  }

  depends_on = [google_pubsub_topic.orders, google_pubsub_topic.orders_dlq]
}

resource "google_pubsub_subscription" "orders_dlq_hold" {
  name  = "orders-dlq-hold"
  topic = "projects/acme-prod/topics/orders-dlq"
  expiration_policy {
    ttl = ""
  }

  depends_on = [google_pubsub_topic.orders_dlq]
}

resource "google_pubsub_topic_iam_member" "orders_dlq_publisher" {
  topic  = "orders-dlq"
  role   = "roles/pubsub.publisher"
  member = local.pubsub_agent

  depends_on = [google_pubsub_topic.orders_dlq]
}

resource "google_pubsub_subscription_iam_member" "orders_worker_subscriber" {
  subscription = "projects/acme-prod/subscriptions/orders-worker"
  role         = "roles/pubsub.subscriber"
  member       = local.pubsub_agent

  depends_on = [google_pubsub_subscription.orders_worker]
}

resource "google_pubsub_subscription" "orders_replay" {
  name  = "orders-replay"
  topic = "orders"

  dead_letter_policy {
    dead_letter_topic     = "projects/acme-prod/topics/orders"
    max_delivery_attempts = 5
  }
  retry_policy {
    minimum_backoff = "10s"
    maximum_backoff = "600s"
  }
  expiration_policy {
    ttl = ""
  }

  depends_on = [google_pubsub_topic.orders]
}

resource "google_pubsub_subscription_iam_member" "orders_replay_subscriber" {
  subscription = "orders-replay"
  role         = "roles/pubsub.subscriber"
  member       = local.pubsub_agent

  depends_on = [google_pubsub_subscription.orders_replay]
}
