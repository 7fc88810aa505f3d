# A root subscription without a dead-letter policy beside one module call whose
# subscription has a dynamic dead_letter_policy block and which receives the Pub/Sub
# agent from a root local: the local's expression is not in the plan, and a fallback
# that let it name every resource of every module exempted the root subscription as a
# possible dead-letter subscription.

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

resource "google_pubsub_subscription" "orders_audit" {
  name  = "orders-audit"
  topic = google_pubsub_topic.orders.id
  retry_policy {
    minimum_backoff = "10s"
    maximum_backoff = "600s"
  }
  expiration_policy {
    ttl = ""
  }
}

resource "google_pubsub_topic" "dead_letters" {
  name = "dead-letters"
}

resource "google_pubsub_subscription" "dead_letters_hold" {
  name  = "dead-letters-hold"
  topic = google_pubsub_topic.dead_letters.id
  labels = {
    eventpipe_role = "dlq"
  }
  expiration_policy {
    ttl = ""
  }
}

module "payments" {
  source            = "../modules/events-pipeline"
  name              = "payments"
  dead_lettering    = true
  dead_letter_topic = google_pubsub_topic.dead_letters.id
  subscriber_member = local.pubsub_agent
}
