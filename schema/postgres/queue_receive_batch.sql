-- Deletes and returns up to N of the oldest rows of a queue table that no other transaction
-- holds, oldest first (a batched receive: one statement, one transaction, N messages).
-- Parameters: 1 at most this many rows (bigint)
-- Returns: Id, CorrelationId, ReplyToAddress, Headers, Body, Expired (boolean, by database time), Expires; in RowVersion order
WITH message AS (
    SELECT "RowVersion" FROM {table}
    ORDER BY "RowVersion"
    LIMIT $1
    FOR UPDATE SKIP LOCKED),
taken AS (
    DELETE FROM {table} AS queue
    USING message
    WHERE queue."RowVersion" = message."RowVersion"
    RETURNING queue."Id"::text AS "Id", queue."CorrelationId", queue."ReplyToAddress",
        queue."Headers", queue."Body",
        CASE WHEN queue."Expires" IS NULL THEN FALSE
             WHEN queue."Expires" > (now() AT TIME ZONE 'utc') THEN FALSE
             ELSE TRUE END AS "Expired",
        queue."Expires", queue."RowVersion")
SELECT "Id", "CorrelationId", "ReplyToAddress", "Headers", "Body", "Expired", "Expires"
FROM taken
ORDER BY "RowVersion"
