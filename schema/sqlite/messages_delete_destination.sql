-- Deletes at most a batch of a destination's messages from NimbusMessages (dropping a queue in the shared-table layout: repeated until a batch comes back short).
-- Parameters: 1 Destination (text), 2 batch size (integer)
DELETE FROM "NimbusMessages"
WHERE "MessageId" IN (
    SELECT "MessageId" FROM "NimbusMessages"
    WHERE "Destination" = ?1
    LIMIT ?2)
