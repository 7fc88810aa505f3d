output "subscription" {
  value = google_pubsub_subscription.this.name
}

output "dead_letter_topic" {
  value = google_pubsub_topic.dead-letter.id
}
