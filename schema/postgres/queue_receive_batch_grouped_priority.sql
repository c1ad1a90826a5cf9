-- Deletes and returns up to N messages of a queue table that keeps both ordered groups and
-- priorities, each the first of its group as queue_receive_grouped.sql chooses them (never two
-- of one group), the highest Priority first and then the oldest.
-- Parameters: 1 at most this many rows (bigint)
-- Returns: Id, CorrelationId, ReplyToAddress, Headers, Body, Expired (boolean, by database time), Expires, GroupKey, the message's place in its group; highest Priority first, then in RowVersion order
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
        ORDER BY q."Priority" DESC, q."RowVersion"
        LIMIT $1
        FOR UPDATE OF q SKIP LOCKED))
    RETURNING queue."Id"::text AS "Id", queue."CorrelationId", queue."ReplyToAddress",
        queue."Headers", queue."Body",
        queue."Expires", queue."GroupKey",
        COALESCE(queue."GroupPosition", queue."RowVersion") AS "Place", queue."RowVersion", queue."Priority")
SELECT "Id", "CorrelationId", "ReplyToAddress", "Headers", "Body",
    CASE WHEN "Expires" IS NULL THEN FALSE
         WHEN "Expires" > (now() AT TIME ZONE 'utc') THEN FALSE
         ELSE TRUE END AS "Expired", "Expires", "GroupKey", "Place"
FROM taken
ORDER BY "Priority" DESC, "RowVersion"
