-- The receive used while a queue's first messages are all held (see the PostgreSQL file): on
-- SQLite the same as messages_receive_batch_grouped.sql. SQLite has one writer: a receive commits
-- before the next one reads, so no receive finds the first messages held by another.
-- Parameters: 1 Destination (text), 2 at most this many rows (integer)
-- Returns: MessageId, NULL, NULL, NULL, Body (the envelope), Expired (0/1, by database time), ExpiresAt, GroupKey, the message's place in its group; in the order SQLite deletes them
WITH message AS (
    SELECT q."MessageId" FROM "NimbusMessages" AS q
    WHERE q."Destination" = ?1 AND q."VisibleAfter" <= strftime('%Y-%m-%d %H:%M:%f', 'now')
      AND (q."GroupKey" IS NULL OR NOT EXISTS (
          SELECT 1 FROM "NimbusMessages" AS earlier
          WHERE earlier."Destination" = q."Destination" AND earlier."GroupKey" = q."GroupKey"
            AND (earlier."GroupPlace" < q."GroupPlace"
                 OR (earlier."GroupPlace" = q."GroupPlace" AND earlier."MessageId" < q."MessageId"))))
    ORDER BY q."VisibleAfter", q."MessageId"
    LIMIT ?2)
DELETE FROM "NimbusMessages"
WHERE "MessageId" IN (SELECT "MessageId" FROM message)
RETURNING "MessageId", NULL, NULL, NULL, "Body",
    CASE WHEN "ExpiresAt" IS NULL THEN 0
         WHEN "ExpiresAt" > strftime('%Y-%m-%d %H:%M:%f', 'now') THEN 0
         ELSE 1 END AS "Expired",
    "ExpiresAt", "GroupKey", "GroupPlace"
