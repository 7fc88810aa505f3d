# A module that plans no resource: it only passes a topic through, as naming and
# wiring modules do.

variable "topic" {
  type = string
}

output "topic" {
  value = var.topic
}
