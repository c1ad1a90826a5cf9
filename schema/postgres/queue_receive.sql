-- Deletes and returns the oldest row of a queue table that no other transaction holds.
-- Parameters: none
-- Returns: Id (text), CorrelationId, ReplyToAddress, Headers, Body, Expired (boolean, by database time), Expires
WITH message AS (
    SELECT "RowVersion", (now() AT TIME ZONE 'utc') AS "Now" FROM {table}
    ORDER BY "RowVersion"
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
