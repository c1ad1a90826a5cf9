-- Deletes and returns at most a batch of due delayed messages (Due, then RowVersion order).
-- Parameters: 1 batch size (integer)
-- Returns: Id (text), Destination, CorrelationId, ReplyToAddress, Expires, Headers, Body
WITH due AS (
    SELECT "RowVersion" FROM "NimbusDelayedMessages"
    WHERE "Due" <= strftime('%Y-%m-%d %H:%M:%f', 'now')
    ORDER BY "Due", "RowVersion"
    LIMIT ?1)
DELETE FROM "NimbusDelayedMessages"
WHERE "RowVersion" IN (SELECT "RowVersion" FROM due)
RETURNING "Id", "Destination", "CorrelationId", "ReplyToAddress", "Expires", "Headers", "Body"
