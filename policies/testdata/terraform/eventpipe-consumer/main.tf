# An eventpipe consumer on Cloud Run storing its idempotency records in Firestore, with
# TTL policies on two of its three collections, an invoker grant to everyone, the
# Pub/Sub push subscription that feeds it and a partner webhook subscription pushing
# over plain HTTP without OIDC; a terraform_data resource records the deployed release.

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

resource "google_pubsub_topic" "payments" {
  name = "payments"
}

resource "google_pubsub_topic" "payments_dlq" {
  name = "payments-dlq"
}

resource "google_cloud_run_v2_service" "consumer" {
  name                = "payments-consumer"
  location            = "europe-west1"
  ingress             = "INGRESS_TRAFFIC_ALL"
  deletion_protection = false

  template {
    service_account                  = "payments-consumer@acme-prod.iam.gserviceaccount.com"
    max_instance_request_concurrency = 40

    containers {
      image = "europe-docker.pkg.dev/acme-prod/eventpipe/consumer:2.3.0"

      env {
        name  = "EVENTPIPE_STORE"
        value = "firestore://acme-prod/(default)"
      }
      env {
        name  = "EVENTPIPE_COLLECTION_PREFIX"
        value = "payments_"
      }

      resources {
        limits = {
          cpu    = "1"
          memory = "512Mi"
        }
      }
    }

    scaling {
      max_instance_count = 10
    }
  }
}

resource "google_cloud_run_v2_service_iam_member" "public" {
  name     = google_cloud_run_v2_service.consumer.name
  location = google_cloud_run_v2_service.consumer.location
  role     = "roles/run.invoker"
  member   = "allUsers"
}

resource "google_firestore_field" "ttl" {
  for_each   = toset(["dedupe", "leases"])
  collection = "payments_${each.key}"
  field      = "expireAt"

  ttl_config {}
  index_config {}
}

resource "google_pubsub_subscription" "payments_push" {
  name                 = "payments-push"
  topic                = google_pubsub_topic.payments.id
  ack_deadline_seconds = 60

  push_config {
    push_endpoint = "${google_cloud_run_v2_service.consumer.uri}/pubsub/push"
    oidc_token {
      service_account_email = "payments-push@acme-prod.iam.gserviceaccount.com"
    }
  }
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

resource "google_pubsub_subscription" "partner_webhook" {
  name  = "payments-partner-webhook"
  topic = google_pubsub_topic.payments.id

  push_config {
    push_endpoint = "http://hooks.partner.example/acme/payments"
  }
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
  name                       = "payments-dlq-hold"
  topic                      = google_pubsub_topic.payments_dlq.id
  message_retention_duration = "1209600s"
  expiration_policy {
    ttl = ""
  }
}

resource "google_pubsub_topic_iam_member" "dlq_publisher" {
  topic  = google_pubsub_topic.payments_dlq.name
  role   = "roles/pubsub.publisher"
  member = local.pubsub_agent
}

resource "google_pubsub_subscription_iam_member" "subscriber" {
  for_each     = toset(["payments-push", "payments-partner-webhook"])
  subscription = each.key
  role         = "roles/pubsub.subscriber"
  member       = local.pubsub_agent

  depends_on = [google_pubsub_subscription.payments_push, google_pubsub_subscription.partner_webhook]
}

resource "terraform_data" "release" {
  input = {
    image   = google_cloud_run_v2_service.consumer.template[0].containers[0].image
    version = "2.3.0"
  }
}
