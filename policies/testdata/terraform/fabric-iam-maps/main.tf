# Two calls of a cloud-foundation-fabric-style pubsub module: the dead-letter topic with
# an authoritative IAM map granting the Pub/Sub service agent publisher, and the orders
# topic with map-keyed subscriptions, each dead-lettering to the first call's id output
# and granting the agent subscriber through its own IAM map.

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

module "orders_dlq" {
  source     = "../modules/fabric-pubsub"
  project_id = "acme-prod"
  name       = "orders-dlq"
  iam = {
    "roles/pubsub.publisher" = [local.pubsub_agent]
    "roles/pubsub.viewer"    = ["group:oncall@acme.example"]
  }
  subscriptions = {
    orders-dlq-hold = {
      expiration_policy_ttl      = ""
      message_retention_duration = "1209600s"
    }
  }
}

module "orders" {
  source     = "../modules/fabric-pubsub"
  project_id = "acme-prod"
  name       = "orders"
  regions    = ["europe-west1"]
  subscriptions = {
    orders-fulfilment = {
      push = {
        endpoint   = "https://fulfilment-4ntr3b2kqa-ew.a.run.app/pubsub/push"
        oidc_token = { service_account_email = "fulfilment-push@acme-prod.iam.gserviceaccount.com" }
      }
      dead_letter_policy    = { topic = module.orders_dlq.id, max_delivery_attempts = 10 }
      retry_policy          = { minimum_backoff = 10, maximum_backoff = 600 }
      expiration_policy_ttl = ""
      iam                   = { "roles/pubsub.subscriber" = [local.pubsub_agent] }
    }
    orders-warehouse = {
      dead_letter_policy = { topic = module.orders_dlq.id }
      retry_policy       = { minimum_backoff = 5 }
      iam                = { "roles/pubsub.subscriber" = [local.pubsub_agent] }
    }
    orders-archive = {
      labels = {
        eventpipe_dlq_opt_out        = "true"
        eventpipe_dlq_opt_out_reason = "bigquery-export-replays-from-the-source"
      }
      retry_policy          = { minimum_backoff = 10, maximum_backoff = 600 }
      expiration_policy_ttl = ""
    }
  }
}
