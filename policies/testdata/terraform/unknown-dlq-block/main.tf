# Workers that switch dead-lettering on per worker with a dynamic block gated on the
# dead-letter topic's id, an in-house variant of terraform-google-modules/pubsub's
# style: while planning, the id is unknown, so whether the block exists at all is
# unknown, and its content never appears in the plan's configuration.

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

variable "workers" {
  type = map(object({
    dead_letter   = bool
    push_endpoint = string
  }))
  default = {
    invoices  = { dead_letter = true, push_endpoint = "https://invoices-4ntr3b2kqa-ew.a.run.app/pubsub/push" }
    reminders = { dead_letter = true, push_endpoint = "https://reminders-4ntr3b2kqa-ew.a.run.app/pubsub/push" }
    metrics   = { dead_letter = false, push_endpoint = "http://metrics.internal.acme.example/pubsub/push" }
  }
}

resource "google_pubsub_topic" "billing" {
  name = "billing"
}

resource "google_pubsub_topic" "dlq" {
  name = "billing-dlq"
}

resource "google_pubsub_subscription" "worker" {
  for_each = var.workers
  name     = "billing-${each.key}"
  topic    = google_pubsub_topic.billing.id

  push_config {
    push_endpoint = each.value.push_endpoint
    oidc_token {
      service_account_email = "billing-push@acme-prod.iam.gserviceaccount.com"
    }
  }

  dynamic "dead_letter_policy" {
    for_each = compact([each.value.dead_letter ? google_pubsub_topic.dlq.id : ""])
    content {
      dead_letter_topic     = dead_letter_policy.value
      max_delivery_attempts = 5
    }
  }

  retry_policy {
    minimum_backoff = "10s"
    maximum_backoff = "600s"
  }
  expiration_policy {
    ttl = ""
  }
}

resource "google_pubsub_subscription" "dlq_hold" {
  name  = "billing-dlq-hold"
  topic = google_pubsub_topic.dlq.id
  expiration_policy {
    ttl = ""
  }
}

resource "google_pubsub_topic_iam_member" "dlq_publisher" {
  topic  = google_pubsub_topic.dlq.name
  role   = "roles/pubsub.publisher"
  member = local.pubsub_agent
}

resource "google_pubsub_subscription_iam_member" "subscriber" {
  for_each     = { for k, w in var.workers : k => w if w.dead_letter }
  subscription = google_pubsub_subscription.worker[each.key].name
  role         = "roles/pubsub.subscriber"
  member       = local.pubsub_agent
}
