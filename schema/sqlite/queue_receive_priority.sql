-- Deletes and returns the row of a priority queue table with the highest Priority, the oldest of those,
-- (BEGIN IMMEDIATE holds the write lock, so no other receiver can take it).
-- Parameters: none
-- Returns: Id (text), CorrelationId, ReplyToAddress, Headers, Body, Expired (0/1, by database time), Expires
WITH message AS (
    SELECT "RowVersion" FROM {table}
    ORDER BY "Priority" DESC, "RowVersion"
    LIMIT 1)
DELETE FROM {table}
WHERE "RowVersion" IN (SELECT "RowVersion" FROM message)
RETURNING "Id", "CorrelationId", "ReplyToAddress", "Headers", "Body",
    CASE WHEN "Expires" IS NULL THEN 0
         WHEN "Expires" > strftime('%Y-%m-%d %H:%M:%f', 'now') THEN 0
         ELSE 1 END AS "Expired",
    "Expires"
