-- Lists dead letters, oldest FailedAt first (MessageId breaks ties), without removing them.
-- Parameters: 1 max rows (bigint)
-- Returns: MessageId (text), OriginalDestination, Body, DeliveryAttempts, FailedAt
SELECT "MessageId"::text AS "MessageId", "OriginalDestination", "Body", "DeliveryAttempts", "FailedAt"
FROM {schema}."NimbusDeadLetters"
ORDER BY "FailedAt", "MessageId"
LIMIT $1
