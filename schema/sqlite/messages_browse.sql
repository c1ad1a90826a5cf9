-- Returns the first rows of a destination in NimbusMessages by VisibleAfter, MessageId, without removing them.
-- Parameters: 1 Destination (text), 2 max rows (integer)
-- Returns: MessageId (text), Body, VisibleAfter, ExpiresAt
SELECT "MessageId", "Body", "VisibleAfter", "ExpiresAt"
FROM "NimbusMessages"
WHERE "Destination" = ?1
ORDER BY "VisibleAfter", "MessageId"
LIMIT ?2
