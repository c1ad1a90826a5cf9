-- Deletes and returns the oldest row (by Seq) of a queue table that no other transaction holds,
-- as NServiceBus's ReceiveText does: the row is chosen by a scalar subquery, which runs once, so
-- the DELETE takes at most one row.
-- Parameters: none
-- Returns: Id (text), CorrelationId, ReplyToAddress (always NULL: NServiceBus keeps them in the headers), Headers, Body, Expired (boolean, by database time), Expires
WITH message AS (
    SELECT Id, (now() AT TIME ZONE 'utc') AS "Now" FROM {table}
    ORDER BY Seq
    LIMIT 1
    FOR UPDATE SKIP LOCKED)
DELETE FROM {table} AS queue
USING message
WHERE queue.Id = message.Id
RETURNING queue.Id::text, NULL::varchar AS "CorrelationId", NULL::varchar AS "ReplyToAddress",
    queue.Headers, queue.Body,
    CASE WHEN queue.Expires IS NULL THEN FALSE
         WHEN queue.Expires > message."Now" THEN FALSE
         ELSE TRUE END AS "Expired",
    queue.Expires
