SELECT "MessageId", "OriginalDestination", "Body", "DeliveryAttempts", "FailedAt"
FROM "NimbusDeadLetters"
WHERE "MessageId" = ?1