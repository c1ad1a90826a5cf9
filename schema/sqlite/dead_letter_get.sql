-- Reads one dead letter without removing it; no row when there is none.
-- Parameters: 1 MessageId (text)
-- Returns: MessageId (text), OriginalDestination, Body, DeliveryAttempts, FailedAt
SELECT "MessageId", "OriginalDestination", "Body", "DeliveryAttempts", "FailedAt"
FROM "NimbusDeadLetters"
WHERE "MessageId" = ?1
