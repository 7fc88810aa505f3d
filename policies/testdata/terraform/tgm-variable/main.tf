# A terraform-google-modules/pubsub-style module whose pull subscriptions take their
# dead-letter topic from a variable, one of them without any: the dead-letter topic and
# its subscription come from a second call of the module.

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

variable "dead_letter_topic" {
  description = "Where undeliverable order events go."
  type        = string
  default     = "projects/acme-prod/topics/order-events-dlq"
}

module "dead_letters" {
  source     = "../modules/tgm-pubsub"
  project_id = "acme-prod"
  topic      = "order-events-dlq"
  pull_subscriptions = [{
    name              = "order-events-dlq-hold"
    expiration_policy = ""
  }]
}

module "order_events" {
  source     = "../modules/tgm-pubsub"
  project_id = "acme-prod"
  topic      = "order-events"
  pull_subscriptions = [
    {
      name              = "order-events-billing"
      dead_letter_topic = var.dead_letter_topic
      minimum_backoff   = "10s"
      maximum_backoff   = "600s"
      expiration_policy = ""
    },
    {
      name                  = "order-events-shipping"
      dead_letter_topic     = var.dead_letter_topic
      max_delivery_attempts = 20
      minimum_backoff       = "10s"
      maximum_backoff       = "600s"
      expiration_policy     = ""
    },
    {
      name              = "order-events-analytics"
      minimum_backoff   = "10s"
      maximum_backoff   = "600s"
      expiration_policy = ""
    },
  ]
}
