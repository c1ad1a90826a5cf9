-- Deletes and returns up to N visible messages of a destination from NimbusMessages
-- (shared-table layout; a batched receive), the highest Priority first, then by VisibleAfter and
-- MessageId. The transaction holds the file's write lock.
-- Parameters: 1 Destination (text), 2 at most this many rows (integer)
-- Returns: MessageId, NULL, NULL, NULL, Body (the envelope), Expired (0/1, by database time), ExpiresAt; in the order SQLite deletes them
WITH message AS (
    SELECT "MessageId" FROM "NimbusMessages"
    WHERE "Destination" = ?1 AND "VisibleAfter" <= strftime('%Y-%m-%d %H:%M:%f', 'now')
    ORDER BY "Priority" DESC, "VisibleAfter", "MessageId"
    LIMIT ?2)
DELETE FROM "NimbusMessages"
WHERE "MessageId" IN (SELECT "MessageId" FROM message)
RETURNING "MessageId", NULL, NULL, NULL, "Body",
    CASE WHEN "ExpiresAt" IS NULL THEN 0
         WHEN "ExpiresAt" > strftime('%Y-%m-%d %H:%M:%f', 'now') THEN 0
         ELSE 1 END AS "Expired",
    "ExpiresAt"
