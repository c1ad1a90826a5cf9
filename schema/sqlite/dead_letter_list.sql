-- Lists dead letters, oldest FailedAt first (MessageId breaks ties), without removing them.
-- Parameters: 1 max rows (integer)
-- Returns: MessageId (text), OriginalDestination, Body, DeliveryAttempts, FailedAt
SELECT "MessageId", "OriginalDestination", "Body", "DeliveryAttempts", "FailedAt"
FROM "NimbusDeadLetters"
ORDER BY "FailedAt", "MessageId"
LIMIT ?1
