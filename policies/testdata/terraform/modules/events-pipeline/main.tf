# An in-house events pipeline module in the common shape: a topic, a subscription whose
# dead-letter policy is a dynamic block switched on by a variable, and the
# service agent's subscriber grant, whose member the caller passes (often a root local).

terraform {
  required_providers {
    google = {
      source  = "hashicorp/google"
      version = ">= 7.0, < 8.0"
    }
  }
}

variable "name" {
  type = string
}

variable "dead_lettering" {
  description = "Whether undeliverable messages go to dead_letter_topic."
  type        = bool
  default     = false
}

variable "dead_letter_topic" {
  description = "Where undeliverable messages go, with dead_lettering."
  type        = string
  default     = null
}

variable "subscriber_member" {
  description = "The Pub/Sub service agent, as an IAM member."
  type        = string
}

resource "google_pubsub_topic" "this" {
  name = var.name
}

resource "google_pubsub_subscription" "this" {
  name  = "${var.name}-worker"
  topic = google_pubsub_topic.this.id

  dynamic "dead_letter_policy" {
    for_each = var.dead_lettering ? [var.dead_letter_topic] : []
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

resource "google_pubsub_subscription_iam_member" "subscriber" {
  count        = var.dead_lettering ? 1 : 0
  subscription = google_pubsub_subscription.this.name
  role         = "roles/pubsub.subscriber"
  member       = var.subscriber_member
}

output "topic_id" {
  value = google_pubsub_topic.this.id
}
