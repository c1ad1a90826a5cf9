-- Deletes and returns up to N visible messages of a destination from NimbusMessages
-- (shared-table layout), each the first of its group (as messages_receive_grouped.sql chooses
-- one), so a batch never holds two messages of one group. Locked first, then deleted by ctid,
-- planned afresh on each call (as messages_receive_batch.sql).
-- Parameters: 1 Destination (varchar), 2 at most this many rows (bigint)
-- Returns: MessageId, NULL, NULL, NULL, Body (the envelope), Expired (boolean, by database time), ExpiresAt, GroupKey, the message's place in its group; in VisibleAfter, MessageId order
WITH taken AS (
    DELETE FROM {schema}."NimbusMessages" AS queue
    WHERE queue.ctid = ANY(ARRAY(
        SELECT q.ctid FROM {schema}."NimbusMessages" AS q
        WHERE q."Destination" = $1 AND q."VisibleAfter" <= (now() AT TIME ZONE 'utc')
          AND (q."GroupKey" IS NULL OR NOT EXISTS (
              SELECT 1 FROM {schema}."NimbusMessages" AS earlier
              WHERE earlier."Destination" = q."Destination" AND earlier."GroupKey" = q."GroupKey"
                AND (earlier."GroupPlace" < q."GroupPlace"
                     OR (earlier."GroupPlace" = q."GroupPlace" AND earlier."MessageId" < q."MessageId"))))
        ORDER BY q."VisibleAfter", q."MessageId"
        LIMIT $2
        FOR UPDATE OF q SKIP LOCKED))
    RETURNING queue."MessageId", queue."Body",
        queue."ExpiresAt", queue."GroupKey", queue."GroupPlace", queue."VisibleAfter")
SELECT "MessageId"::text, NULL::varchar, NULL::varchar, NULL::text, "Body",
    CASE WHEN "ExpiresAt" IS NULL THEN FALSE
         WHEN "ExpiresAt" > (now() AT TIME ZONE 'utc') THEN FALSE
         ELSE TRUE END AS "Expired", "ExpiresAt",
    "GroupKey", "GroupPlace"
FROM taken
ORDER BY "VisibleAfter", "MessageId"
