-- Deletes and returns up to N rows of a grouped queue table, oldest first, each the first of its
-- group (as queue_receive_grouped.sql chooses one), so a batch never holds two messages of one
-- group. Locked first, then deleted by ctid, planned afresh on each call (as queue_receive_batch.sql).
-- Parameters: 1 at most this many rows (bigint)
-- Returns: Id, CorrelationId, ReplyToAddress, Headers, Body, Expired (boolean, by database time), Expires, GroupKey, the message's place in its group; in RowVersion order
WITH taken AS (
    DELETE FROM {table} AS queue
    WHERE queue.ctid = ANY(ARRAY(
        SELECT q.ctid FROM {table} AS q
        WHERE (q."NotBefore" IS NULL OR q."NotBefore" <= (now() AT TIME ZONE 'utc'))
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
        LIMIT $1
        FOR UPDATE OF q SKIP LOCKED))
    RETURNING queue."Id"::text AS "Id", queue."CorrelationId", queue."ReplyToAddress",
        queue."Headers", queue."Body",
        queue."Expires", queue."GroupKey",
        COALESCE(queue."GroupPosition", queue."RowVersion") AS "Place", queue."RowVersion")
SELECT "Id", "CorrelationId", "ReplyToAddress", "Headers", "Body",
    CASE WHEN "Expires" IS NULL THEN FALSE
         WHEN "Expires" > (now() AT TIME ZONE 'utc') THEN FALSE
         ELSE TRUE END AS "Expired", "Expires", "GroupKey", "Place"
FROM taken
ORDER BY "RowVersion"
