SELECT "MessageId", "OriginalDestination", "Body", "DeliveryAttempts", "FailedAt"
FROM "NimbusDeadLetters"
ORDER BY "FailedAt", "MessageId"
LIMIT ?1