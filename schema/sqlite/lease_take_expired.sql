-- Deletes and returns the longest-expired lease of a queue (by database time), in a transaction (BEGIN IMMEDIATE: the file's write lock) that stays open until its message is retried or dead-lettered.
-- Parameters: 1 Queue (text)
-- Returns: Id (text), CorrelationId, ReplyToAddress, Headers, Body, Expired (0/1, by database time), Expires
WITH lapsed AS (
    SELECT "LeaseId" FROM "NimbusLeases"
    WHERE "Queue" = ?1 AND "LeasedUntil" < strftime('%Y-%m-%d %H:%M:%f', 'now')
    ORDER BY "LeasedUntil"
    LIMIT 1)
DELETE FROM "NimbusLeases"
WHERE "LeaseId" IN (SELECT "LeaseId" FROM lapsed)
RETURNING "Id", "CorrelationId", "ReplyToAddress", "Headers", "Body",
    CASE WHEN "Expires" IS NULL THEN 0
         WHEN "Expires" > strftime('%Y-%m-%d %H:%M:%f', 'now') THEN 0
         ELSE 1 END AS "Expired",
    "Expires"
