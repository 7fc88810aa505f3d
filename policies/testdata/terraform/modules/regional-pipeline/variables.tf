variable "project_id" {
  type    = string
  default = "acme-prod"
}

variable "name" {
  type = string
}

variable "region" {
  type = string
}

variable "dead_letter" {
  description = "Whether the worker subscription dead-letters (to a topic made here)."
  type        = bool
  default     = true
}

variable "push_endpoint" {
  type = string
}

variable "push_service_account" {
  type = string
}
