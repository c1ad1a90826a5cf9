-- Deletes and returns the row of a priority queue table with the highest Priority, the oldest of those,
-- that no other transaction holds.
-- Parameters: none
-- Returns: Id (text), CorrelationId, ReplyToAddress, Headers, Body, Expired (boolean, by database time), Expires
WITH message AS (
    SELECT "RowVersion", (now() AT TIME ZONE 'utc') AS "Now" FROM {table}
    ORDER BY "Priority" DESC, "RowVersion"
    LIMIT 1
    FOR UPDATE SKIP LOCKED)
DELETE FROM {table} AS queue
USING message
WHERE queue."RowVersion" = message."RowVersion"
RETURNING queue."Id"::text, queue."CorrelationId", queue."ReplyToAddress", queue."Headers", queue."Body",
    CASE WHEN queue."Expires" IS NULL THEN FALSE
         WHEN queue."Expires" > message."Now" THEN FALSE
         ELSE TRUE END AS "Expired",
    queue."Expires"
