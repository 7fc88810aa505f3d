output "id" {
  description = "The topic's id (projects/P/topics/NAME), known once it is created."
  value       = var.create_topic ? google_pubsub_topic.topic[0].id : ""
}

output "topic" {
  description = "The topic's name."
  value       = var.create_topic ? google_pubsub_topic.topic[0].name : var.topic
}

output "subscription_names" {
  value = concat(keys(local.push), keys(local.pull))
}
