-- Deletes and returns up to N rows of a grouped queue table, each the first of its group (as
-- queue_receive_grouped.sql chooses one), never two of one group: the receive used while a
-- queue's first messages are all held, where queue_receive_batch_grouped.sql, reading on until
-- it has N, would read the whole queue with two index look-ups per row. Two looks, each with a
-- bounded cost however deep the queue is:
--   front: the oldest 256 rows, oldest first (first in, first out);
--   heads: only when the front gave nothing (every group there is held or waiting), the first
--   message of each group, read in key order from the (GroupKey, RowVersion) index (one index
--   entry per message, no look-up) and, for a group whose failed message waits as a retry
--   copy, the (GroupPosition, GroupKey) index; stopping once N are taken. A group whose first
--   message lies beyond the front is found there while the front's are busy. (A skip from
--   group to group would read fewer entries, but a recursive query is refused on Citus.)
-- Rows another transaction holds are skipped in both. The clock is read once, in `clock`: Citus
-- refuses a function that is not immutable inside COALESCE. Locked first, then deleted by ctid (as
-- queue_receive_batch.sql).
-- The heads are looked for only when the front's array is empty and the last parameter is 1: a
-- process lets one receive of a queue at a time look, and after a look that took nothing, waits
-- ten times as long as it took before the next (while every group is held, each look would read
-- the whole group index and find nothing).
-- Parameters: 1 at most this many rows (bigint), 2 whether to look at the heads (int: 1 yes, 0 no)
-- Returns: Id, CorrelationId, ReplyToAddress, Headers, Body, Expired (boolean, by database time), Expires, GroupKey, the message's place in its group; in RowVersion order
WITH clock AS MATERIALIZED (
    SELECT (now() AT TIME ZONE 'utc') AS "Now"
), taken AS (
    DELETE FROM {table} AS queue
    WHERE queue.ctid = ANY(COALESCE(
        NULLIF(ARRAY(
            SELECT q.ctid
            FROM (SELECT w.ctid AS "Row", w."RowVersion" FROM {table} AS w
                  ORDER BY w."RowVersion"
                  LIMIT 256) AS w
            JOIN {table} AS q ON q.ctid = w."Row"
            WHERE (q."NotBefore" IS NULL OR q."NotBefore" <= (SELECT clock."Now" FROM clock))
              AND (q."GroupKey" IS NULL OR (
                  NOT EXISTS (
                      SELECT 1 FROM {table} AS older
                      WHERE older."GroupKey" = q."GroupKey"
                        AND older."RowVersion" < COALESCE(q."GroupPosition", q."RowVersion"))
                  AND NOT EXISTS (
                      SELECT 1 FROM {table} AS older
                      WHERE older."GroupPosition" IS NOT NULL AND older."GroupKey" = q."GroupKey"
                        AND older."GroupPosition" < COALESCE(q."GroupPosition", q."RowVersion"))))
            ORDER BY w."RowVersion"
            LIMIT $1
            FOR UPDATE OF q SKIP LOCKED), '{}'),
        ARRAY(
            SELECT q.ctid
            FROM (SELECT DISTINCT ON (g."GroupKey") g."GroupKey", g."RowVersion"
                  FROM {table} AS g
                  WHERE g."GroupKey" IS NOT NULL
                  ORDER BY g."GroupKey", g."RowVersion") AS groups
            CROSS JOIN LATERAL (
                SELECT groups."RowVersion"
                UNION ALL
                (SELECT r."RowVersion" FROM {table} AS r
                 WHERE r."GroupPosition" IS NOT NULL AND r."GroupKey" = groups."GroupKey"
                 ORDER BY r."GroupPosition"
                 LIMIT 1)) AS candidate
            JOIN {table} AS q ON q."RowVersion" = candidate."RowVersion"
            WHERE $2::int = 1
              AND (q."NotBefore" IS NULL OR q."NotBefore" <= (SELECT clock."Now" FROM clock))
              AND groups."RowVersion" >= COALESCE(q."GroupPosition", q."RowVersion")
              AND NOT EXISTS (
                  SELECT 1 FROM {table} AS older
                  WHERE older."GroupPosition" IS NOT NULL AND older."GroupKey" = q."GroupKey"
                    AND older."GroupPosition" < COALESCE(q."GroupPosition", q."RowVersion"))
            LIMIT $1
            FOR UPDATE OF q SKIP LOCKED)))
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
