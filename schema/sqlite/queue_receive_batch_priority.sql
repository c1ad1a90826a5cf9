-- Deletes and returns up to N rows of a priority queue table, the highest Priority first and the oldest first within a priority,
-- (a batched receive). The transaction holds the file's write lock, so no other receiver can take them meanwhile.
-- Parameters: 1 at most this many rows (integer)
-- Returns: Id, CorrelationId, ReplyToAddress, Headers, Body, Expired (0/1, by database time), Expires; in the order SQLite deletes them (RETURNING promises none: the receiver sorts nothing, handling order within a batch is not guaranteed)
WITH message AS (
    SELECT "RowVersion" FROM {table}
    ORDER BY "Priority" DESC, "RowVersion"
    LIMIT ?1)
DELETE FROM {table}
WHERE "RowVersion" IN (SELECT "RowVersion" FROM message)
RETURNING "Id", "CorrelationId", "ReplyToAddress", "Headers", "Body",
    CASE WHEN "Expires" IS NULL THEN 0
         WHEN "Expires" > strftime('%Y-%m-%d %H:%M:%f', 'now') THEN 0
         ELSE 1 END AS "Expired",
    "Expires"
