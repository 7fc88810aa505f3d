variable "project_id" {
  type = string
}

variable "name" {
  description = "Name of the trigger: prefixes its subscription and dead-letter topic."
  type        = string
}

variable "team" {
  type    = string
  default = "platform"
}

variable "broker" {
  description = "Name of the topic the events are published to."
  type        = string
}

variable "filter" {
  description = "CloudEvent attributes an event must have to be delivered (type, source, ...)."
  type        = map(string)
}

variable "private-service" {
  description = "The Cloud Run service the events are delivered to."
  type = object({
    name   = string
    region = string
    uri    = string
  })
}

variable "delivery_service_account" {
  description = "Email of the service account Pub/Sub signs pushes as."
  type        = string
}

variable "ack_deadline_seconds" {
  type    = number
  default = 300
}

variable "max_delivery_attempts" {
  type    = number
  default = 5
}

variable "minimum_backoff" {
  type    = number
  default = 10
}

variable "maximum_backoff" {
  type    = number
  default = 600
}

variable "alert_on_dead_letter" {
  type    = bool
  default = true
}

variable "notification_channels" {
  type    = list(string)
  default = []
}
