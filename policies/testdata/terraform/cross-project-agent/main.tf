# Subscriptions in acme-prod dead-lettering to a topic of another project, acme-dlq. Pub/Sub
# dead-letters as the service agent of the subscription's project: the grants of one
# subscription go to acme-dlq's agent instead, the other's to acme-prod's. Both project
# numbers are read while planning (google_project data sources).

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

data "google_project" "dead_letters" {
  project_id = "acme-dlq"
}

locals {
  own_agent = "serviceAccount:service-${data.google_project.this.number}@gcp-sa-pubsub.iam.gserviceaccount.com"
  dlq_agent = "serviceAccount:service-${data.google_project.dead_letters.number}@gcp-sa-pubsub.iam.gserviceaccount.com"
  # Which agent each subscription's grants go to.
  grantees = {
    wrong = local.dlq_agent
    right = local.own_agent
  }
}

resource "google_pubsub_topic" "orders" {
  name = "orders"
}

resource "google_pubsub_topic" "dead_letters" {
  for_each = local.grantees
  project  = "acme-dlq"
  name     = "orders-${each.key}-dead-letters"
}

resource "google_pubsub_subscription" "dead_letters_hold" {
  for_each = local.grantees
  project  = "acme-dlq"
  name     = "orders-${each.key}-dead-letters-hold"
  topic    = google_pubsub_topic.dead_letters[each.key].id
  labels = {
    eventpipe_role = "dlq"
  }
  expiration_policy {
    ttl = ""
  }
}

resource "google_pubsub_subscription" "worker" {
  for_each = local.grantees
  name     = "orders-${each.key}"
  topic    = google_pubsub_topic.orders.id
  dead_letter_policy {
    dead_letter_topic     = "projects/acme-dlq/topics/orders-${each.key}-dead-letters"
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

resource "google_pubsub_topic_iam_member" "publisher" {
  for_each = local.grantees
  project  = "acme-dlq"
  topic    = google_pubsub_topic.dead_letters[each.key].name
  role     = "roles/pubsub.publisher"
  member   = each.value
}

resource "google_pubsub_subscription_iam_member" "subscriber" {
  for_each     = local.grantees
  subscription = google_pubsub_subscription.worker[each.key].name
  role         = "roles/pubsub.subscriber"
  member       = each.value
}
