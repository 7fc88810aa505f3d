# Two event triggers, in the shape of chainguard's cloudevent-trigger module, delivering
# the order events of a broker topic to a private Cloud Run service: each module instance
# has its own dead-letter topic, dead-letter subscription, service-agent grants and
# dead-letter alert.

terraform {
  required_providers {
    google = {
      source  = "hashicorp/google"
      version = ">= 7.0, < 8.0"
    }
    google-beta = {
      source  = "hashicorp/google-beta"
      version = ">= 7.0, < 8.0"
    }
  }
}

provider "google" {
  project = "acme-prod"
  region  = "europe-west1"
}

provider "google-beta" {
  project = "acme-prod"
  region  = "europe-west1"
}

resource "google_pubsub_topic" "broker" {
  name = "order-events"
}

resource "google_cloud_run_v2_service" "recorder" {
  name                = "order-recorder"
  location            = "europe-west1"
  ingress             = "INGRESS_TRAFFIC_INTERNAL_ONLY"
  deletion_protection = false

  template {
    service_account = "order-recorder@acme-prod.iam.gserviceaccount.com"

    containers {
      image = "europe-docker.pkg.dev/acme-prod/apps/order-recorder:1.4.2"

      env {
        name  = "LOG_LEVEL"
        value = "info"
      }
    }
  }
}

module "trigger" {
  source   = "../modules/cloudevent-trigger"
  for_each = {
    order-created = "com.acme.order.created"
    order-paid    = "com.acme.order.paid"
  }

  project_id = "acme-prod"
  name       = each.key
  broker     = google_pubsub_topic.broker.name
  filter     = { type = each.value }

  private-service = {
    name   = google_cloud_run_v2_service.recorder.name
    region = google_cloud_run_v2_service.recorder.location
    uri    = google_cloud_run_v2_service.recorder.uri
  }
  delivery_service_account = "order-delivery@acme-prod.iam.gserviceaccount.com"
}
