-- Returns the first rows of a destination in NimbusMessages by VisibleAfter, MessageId, without removing them.
-- Parameters: 1 Destination (varchar), 2 max rows (bigint)
-- Returns: MessageId (text), Body, VisibleAfter, ExpiresAt
SELECT "MessageId"::text AS "MessageId", "Body", "VisibleAfter", "ExpiresAt"
FROM {schema}."NimbusMessages"
WHERE "Destination" = $1
ORDER BY "VisibleAfter", "MessageId"
LIMIT $2
