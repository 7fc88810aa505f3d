variable "project_id" {
  type = string
}

variable "name" {
  type = string
}

variable "labels" {
  type    = map(string)
  default = {}
}

variable "regions" {
  description = "Regions the topic's messages may be stored in (all when empty)."
  type        = list(string)
  default     = []
}

variable "message_retention_duration" {
  type    = string
  default = null
}

variable "iam" {
  description = "Authoritative topic IAM: role => members."
  type        = map(list(string))
  default     = {}
}

variable "iam_bindings_additive" {
  description = "Additive topic IAM: key => {role, member}."
  type = map(object({
    role   = string
    member = string
  }))
  default = {}
}

variable "subscriptions" {
  type = map(object({
    labels                     = optional(map(string))
    ack_deadline_seconds       = optional(number)
    message_retention_duration = optional(string)
    filter                     = optional(string)
    expiration_policy_ttl      = optional(string)
    dead_letter_policy = optional(object({
      topic                 = string
      max_delivery_attempts = optional(number)
    }))
    push = optional(object({
      endpoint = string
      oidc_token = optional(object({
        service_account_email = string
        audience              = optional(string)
      }))
    }))
    retry_policy = optional(object({
      minimum_backoff = optional(number)
      maximum_backoff = optional(number)
    }))
    iam = optional(map(list(string)), {})
  }))
  default = {}
}
