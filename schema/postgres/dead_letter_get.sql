-- Reads one dead letter without removing it; no row when there is none.
-- Parameters: 1 MessageId (uuid)
-- Returns: MessageId (text), OriginalDestination, Body, DeliveryAttempts, FailedAt
SELECT "MessageId"::text AS "MessageId", "OriginalDestination", "Body", "DeliveryAttempts", "FailedAt"
FROM {schema}."NimbusDeadLetters"
WHERE "MessageId" = $1
