-- The receive used while a queue's first messages are all held (see the PostgreSQL file): on
-- SQLite the same as queue_receive_batch_grouped.sql. SQLite has one writer: a receive commits
-- before the next one reads, so no receive finds the first messages held by another.
-- Parameters: 1 at most this many rows (integer)
-- Returns: Id, CorrelationId, ReplyToAddress, Headers, Body, Expired (0/1, by database time), Expires, GroupKey, the message's place in its group; in the order SQLite deletes them
WITH message AS (
    SELECT q."RowVersion" FROM {table} AS q
    WHERE (q."NotBefore" IS NULL OR q."NotBefore" <= strftime('%Y-%m-%d %H:%M:%f', 'now'))
      AND (q."GroupKey" IS NULL OR (
          NOT EXISTS (
              SELECT 1 FROM {table} AS older
              WHERE older."GroupKey" = q."GroupKey"
                AND older."RowVersion" < COALESCE(q."GroupPosition", q."RowVersion"))
          AND NOT EXISTS (
              SELECT 1 FROM {table} AS older
              WHERE older."GroupKey" = q."GroupKey"
                AND older."GroupPosition" < COALESCE(q."GroupPosition", q."RowVersion"))))
    ORDER BY q."RowVersion"
    LIMIT ?1)
DELETE FROM {table}
WHERE "RowVersion" IN (SELECT "RowVersion" FROM message)
RETURNING "Id", "CorrelationId", "ReplyToAddress", "Headers", "Body",
    CASE WHEN "Expires" IS NULL THEN 0
         WHEN "Expires" > strftime('%Y-%m-%d %H:%M:%f', 'now') THEN 0
         ELSE 1 END AS "Expired",
    "Expires", "GroupKey", COALESCE("GroupPosition", "RowVersion")
