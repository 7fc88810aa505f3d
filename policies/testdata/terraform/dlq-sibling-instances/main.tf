# Two sibling instances of one module, called with for_each and given the Pub/Sub agent
# from a root local: one dead-letters, the other has no dead-letter policy.

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

module "pipeline" {
  source   = "../modules/events-pipeline"
  for_each = {
    payments = { dead_lettering = true, topic = google_pubsub_topic.dead_letters.id }
    audit    = { dead_lettering = false, topic = null }
  }

  name              = each.key
  dead_lettering    = each.value.dead_lettering
  dead_letter_topic = each.value.topic
  subscriber_member = local.pubsub_agent
}
