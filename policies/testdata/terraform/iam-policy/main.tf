# Authoritative IAM policies (policy_data rendered by data.google_iam_policy) on
# dead-letter topics and source subscriptions: one pipeline grants the Pub/Sub service
# agent what dead-lettering needs, one replaces the dead-letter topic's policy with one
# that leaves the agent out, and one's subscription policy can only be read at apply
# time (its data source depends on a resource still to be created).

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

# orders: both policies include the service agent.
resource "google_pubsub_topic" "orders" {
  name = "orders"
}

resource "google_pubsub_topic" "orders_dlq" {
  name = "orders-dlq"
}

resource "google_pubsub_subscription" "orders_worker" {
  name  = "orders-worker"
  topic = google_pubsub_topic.orders.id

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

resource "google_pubsub_subscription" "orders_dlq_hold" {
  name  = "orders-dlq-hold"
  topic = google_pubsub_topic.orders_dlq.id
  expiration_policy {
    ttl = ""
  }
}

data "google_iam_policy" "orders_dlq" {
  binding {
    role    = "roles/pubsub.publisher"
    members = [local.pubsub_agent]
  }
  binding {
    role    = "roles/pubsub.viewer"
    members = ["group:oncall@acme.example"]
  }
}

resource "google_pubsub_topic_iam_policy" "orders_dlq" {
  topic       = google_pubsub_topic.orders_dlq.name
  policy_data = data.google_iam_policy.orders_dlq.policy_data
}

data "google_iam_policy" "orders_worker" {
  binding {
    role    = "roles/pubsub.subscriber"
    members = [local.pubsub_agent, "serviceAccount:orders-worker@acme-prod.iam.gserviceaccount.com"]
  }
}

resource "google_pubsub_subscription_iam_policy" "orders_worker" {
  subscription = google_pubsub_subscription.orders_worker.name
  policy_data  = data.google_iam_policy.orders_worker.policy_data
}

# payments: the dead-letter topic's policy names only the publishing application.
resource "google_pubsub_topic" "payments" {
  name = "payments"
}

resource "google_pubsub_topic" "payments_dlq" {
  name = "payments-dlq"
}

resource "google_pubsub_subscription" "payments_worker" {
  name  = "payments-worker"
  topic = google_pubsub_topic.payments.id

  dead_letter_policy {
    dead_letter_topic     = google_pubsub_topic.payments_dlq.id
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

resource "google_pubsub_subscription" "payments_dlq_hold" {
  name  = "payments-dlq-hold"
  topic = google_pubsub_topic.payments_dlq.id
  expiration_policy {
    ttl = ""
  }
}

data "google_iam_policy" "payments_dlq" {
  binding {
    role    = "roles/pubsub.publisher"
    members = ["serviceAccount:payments-api@acme-prod.iam.gserviceaccount.com"]
  }
}

resource "google_pubsub_topic_iam_policy" "payments_dlq" {
  topic       = google_pubsub_topic.payments_dlq.name
  policy_data = data.google_iam_policy.payments_dlq.policy_data
}

resource "google_pubsub_subscription_iam_member" "payments_worker_agent" {
  subscription = google_pubsub_subscription.payments_worker.name
  role         = "roles/pubsub.subscriber"
  member       = local.pubsub_agent
}

# refunds: the subscription's policy is rendered only once the subscription exists.
resource "google_pubsub_topic" "refunds" {
  name = "refunds"
}

resource "google_pubsub_topic" "refunds_dlq" {
  name = "refunds-dlq"
}

resource "google_pubsub_subscription" "refunds_worker" {
  name  = "refunds-worker"
  topic = google_pubsub_topic.refunds.id

  dead_letter_policy {
    dead_letter_topic     = google_pubsub_topic.refunds_dlq.id
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

resource "google_pubsub_subscription" "refunds_dlq_hold" {
  name  = "refunds-dlq-hold"
  topic = google_pubsub_topic.refunds_dlq.id
  expiration_policy {
    ttl = ""
  }
}

resource "google_pubsub_topic_iam_member" "refunds_dlq_agent" {
  topic  = google_pubsub_topic.refunds_dlq.name
  role   = "roles/pubsub.publisher"
  member = local.pubsub_agent
}

data "google_iam_policy" "refunds_worker" {
  binding {
    role    = "roles/pubsub.subscriber"
    members = [local.pubsub_agent]
  }

  depends_on = [google_pubsub_subscription.refunds_worker]
}

resource "google_pubsub_subscription_iam_policy" "refunds_worker" {
  subscription = google_pubsub_subscription.refunds_worker.name
  policy_data  = data.google_iam_policy.refunds_worker.policy_data
}
