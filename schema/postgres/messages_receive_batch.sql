-- Deletes and returns up to N visible messages of a destination from NimbusMessages
-- (shared-table layout) that no other transaction holds, oldest first (a batched receive). The
-- rows are locked first and then deleted by their ctid (a TID scan, whatever the statistics say);
-- the statement is planned afresh on each call, never from a cached generic plan.
-- Parameters: 1 Destination (varchar), 2 at most this many rows (bigint)
-- Returns: MessageId, NULL, NULL, NULL, Body (the envelope), Expired (boolean, by database time), ExpiresAt; in VisibleAfter, MessageId order
WITH taken AS (
    DELETE FROM {schema}."NimbusMessages" AS queue
    WHERE queue.ctid = ANY(ARRAY(
        SELECT ctid FROM {schema}."NimbusMessages"
        WHERE "Destination" = $1 AND "VisibleAfter" <= (now() AT TIME ZONE 'utc')
        ORDER BY "VisibleAfter", "MessageId"
        LIMIT $2
        FOR UPDATE SKIP LOCKED))
    RETURNING queue."MessageId", queue."Body",
        queue."ExpiresAt", queue."VisibleAfter")
SELECT "MessageId"::text, NULL::varchar, NULL::varchar, NULL::text, "Body",
    CASE WHEN "ExpiresAt" IS NULL THEN FALSE
         WHEN "ExpiresAt" > (now() AT TIME ZONE 'utc') THEN FALSE
         ELSE TRUE END AS "Expired", "ExpiresAt"
FROM taken
ORDER BY "VisibleAfter", "MessageId"
