variable "project_id" {
  type = string
}

variable "topic" {
  description = "Name of the topic the subscriptions read (created here unless create_topic is false)."
  type        = string
}

variable "create_topic" {
  type    = bool
  default = true
}

variable "topic_labels" {
  type    = map(string)
  default = {}
}

variable "subscription_labels" {
  type    = map(string)
  default = {}
}

variable "push_subscriptions" {
  type = list(object({
    name                       = string
    push_endpoint              = string
    oidc_service_account_email = optional(string)
    audience                   = optional(string)
    ack_deadline_seconds       = optional(number)
    message_retention_duration = optional(string)
    expiration_policy          = optional(string)
    dead_letter_topic          = optional(string)
    max_delivery_attempts      = optional(number, 5)
    minimum_backoff            = optional(string)
    maximum_backoff            = optional(string)
  }))
  default = []
}

variable "pull_subscriptions" {
  type = list(object({
    name                       = string
    ack_deadline_seconds       = optional(number)
    message_retention_duration = optional(string)
    expiration_policy          = optional(string)
    dead_letter_topic          = optional(string)
    max_delivery_attempts      = optional(number, 5)
    minimum_backoff            = optional(string)
    maximum_backoff            = optional(string)
  }))
  default = []
}
