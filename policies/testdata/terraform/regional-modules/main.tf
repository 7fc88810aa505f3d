# A regional pipeline module called once per region with for_each (one region without
# dead-lettering) and twice more with count, each call nesting a fabric-style pubsub
# module whose worker subscription dead-letters to a topic made by the calling module.

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

module "region" {
  source = "../modules/regional-pipeline"
  for_each = {
    europe-west1    = true
    us-central1     = true
    asia-southeast1 = false
  }

  name                 = "clicks-${each.key}"
  region               = each.key
  dead_letter          = each.value
  push_endpoint        = "https://clicks-4ntr3b2kqa-ew.a.run.app/pubsub/push"
  push_service_account = "clicks-push@acme-prod.iam.gserviceaccount.com"
}

module "replay" {
  source = "../modules/regional-pipeline"
  count  = 2

  name                 = "replay-${count.index}"
  region               = "europe-west1"
  push_endpoint        = "https://replay-4ntr3b2kqa-ew.a.run.app/pubsub/push"
  push_service_account = "replay-push@acme-prod.iam.gserviceaccount.com"
}
