-- Deletes and returns up to N of the oldest rows (by Seq) of a queue table that no other
-- transaction holds, oldest first (a batched receive: one statement, one transaction, N
-- messages), locking the rows first and deleting them by their ctid, planned afresh on each call.
-- Parameters: 1 at most this many rows (bigint)
-- Returns: Id, CorrelationId, ReplyToAddress (always NULL), Headers, Body, Expired (boolean, by database time), Expires; in Seq order
WITH taken AS (
    DELETE FROM {table} AS queue
    WHERE queue.ctid = ANY(ARRAY(
        SELECT ctid FROM {table}
        ORDER BY Seq
        LIMIT $1
        FOR UPDATE SKIP LOCKED))
    RETURNING queue.Id::text AS "Id", queue.Headers AS "Headers", queue.Body AS "Body",
        queue.Expires AS "Expires", queue.Seq AS "Seq")
SELECT "Id", NULL::varchar AS "CorrelationId", NULL::varchar AS "ReplyToAddress", "Headers",
    "Body",
    CASE WHEN "Expires" IS NULL THEN FALSE
         WHEN "Expires" > (now() AT TIME ZONE 'utc') THEN FALSE
         ELSE TRUE END AS "Expired", "Expires"
FROM taken
ORDER BY "Seq"
