-- Deletes and returns the oldest row of a grouped queue table that is not waiting (NotBefore)
-- and is the first of its group: no row of its group is older (by RowVersion, or by the
-- GroupPosition a retry copy keeps). BEGIN IMMEDIATE holds the write lock, so no other receiver
-- can take a row meanwhile, and a message being handled stays in the table until its receive
-- commits.
-- Parameters: none
-- Returns: Id (text), CorrelationId, ReplyToAddress, Headers, Body, Expired (0/1, by database time), Expires, GroupKey, the message's place in its group (integer)
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
    LIMIT 1)
DELETE FROM {table}
WHERE "RowVersion" IN (SELECT "RowVersion" FROM message)
RETURNING "Id", "CorrelationId", "ReplyToAddress", "Headers", "Body",
    CASE WHEN "Expires" IS NULL THEN 0
         WHEN "Expires" > strftime('%Y-%m-%d %H:%M:%f', 'now') THEN 0
         ELSE 1 END AS "Expired",
    "Expires", "GroupKey", COALESCE("GroupPosition", "RowVersion")
