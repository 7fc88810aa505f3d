output "id" {
  description = "Fully qualified topic id, known while planning."
  value       = local.topic_id
  depends_on = [
    google_pubsub_topic.default,
    google_pubsub_topic_iam_binding.authoritative,
    google_pubsub_topic_iam_member.bindings,
  ]
}

output "topic" {
  value = google_pubsub_topic.default
}

output "subscription_id" {
  value = { for k, v in google_pubsub_subscription.default : k => v.id }
}
