# Two calls of a terraform-google-modules/pubsub-style module: one makes the dead-letter
# topic and the subscription that keeps its messages, the other the orders topic whose
# subscriptions dead-letter to it, the topic coming from the first call's output.

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

module "dlq" {
  source     = "../modules/tgm-pubsub"
  project_id = "acme-prod"
  topic      = "orders-dlq"
  pull_subscriptions = [{
    name                       = "orders-dlq-pull"
    message_retention_duration = "1209600s"
    expiration_policy          = ""
  }]
}

module "orders" {
  source     = "../modules/tgm-pubsub"
  project_id = "acme-prod"
  topic      = "orders"
  push_subscriptions = [{
    name                       = "orders-push"
    push_endpoint              = "https://orders-consumer-4ntr3b2kqa-ew.a.run.app/pubsub/push"
    oidc_service_account_email = "orders-push@acme-prod.iam.gserviceaccount.com"
    dead_letter_topic          = "projects/acme-prod/topics/${module.dlq.topic}"
    minimum_backoff            = "10s"
    maximum_backoff            = "600s"
  }]
  pull_subscriptions = [
    {
      name              = "orders-billing"
      dead_letter_topic = "projects/acme-prod/topics/${module.dlq.topic}"
      minimum_backoff   = "10s"
      maximum_backoff   = "300s"
    },
    {
      name              = "orders-audit"
      expiration_policy = "1209600s"
      dead_letter_topic = "projects/acme-prod/topics/${module.dlq.topic}"
      minimum_backoff   = "30s"
      maximum_backoff   = "600s"
    },
  ]
}
