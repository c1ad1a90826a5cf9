-- Deletes and returns up to N messages of a queue table that keeps both ordered groups and
-- priorities, each the first of its group as queue_receive_grouped.sql chooses them (never two
-- of one group), the highest Priority first and then the oldest.
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
    ORDER BY q."Priority" DESC, q."RowVersion"
    LIMIT ?1)
DELETE FROM {table}
WHERE "RowVersion" IN (SELECT "RowVersion" FROM message)
RETURNING "Id", "CorrelationId", "ReplyToAddress", "Headers", "Body",
    CASE WHEN "Expires" IS NULL THEN 0
         WHEN "Expires" > strftime('%Y-%m-%d %H:%M:%f', 'now') THEN 0
         ELSE 1 END AS "Expired",
    "Expires", "GroupKey", COALESCE("GroupPosition", "RowVersion")
