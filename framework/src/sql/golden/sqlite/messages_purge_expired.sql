-- Deletes at most a batch of expired messages (by database time) of a destination.
-- Parameters: 1 Destination (text), 2 batch size (integer)
DELETE FROM "NimbusMessages"
WHERE "MessageId" IN (
    SELECT "MessageId" FROM "NimbusMessages"
    WHERE "Destination" = ?1 AND "ExpiresAt" < strftime('%Y-%m-%d %H:%M:%f', 'now')
    LIMIT ?2)
