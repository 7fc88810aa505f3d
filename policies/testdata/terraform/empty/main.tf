# A root module with nothing to create yet: a valid plan with no resource changes.

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

variable "environment" {
  type    = string
  default = "staging"
}

output "environment" {
  value = var.environment
}
