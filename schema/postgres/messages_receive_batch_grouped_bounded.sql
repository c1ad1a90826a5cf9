-- Deletes and returns up to N visible messages of a destination from NimbusMessages
-- (shared-table layout), each the first of its group (as messages_receive_grouped.sql chooses
-- one), never two of one group: the receive used while a destination's first messages are all
-- held, where messages_receive_batch_grouped.sql, reading on until it has N, would read the
-- whole queue with an index look-up per row. Two looks, each with a bounded cost however deep
-- the destination's queue is:
--   front: its first 256 visible rows (VisibleAfter, then MessageId: first in, first out);
--   heads: only when the front gave nothing (every group there is held or waiting), the first
--   message of each group, read in key order from IX_NimbusMessages_Group (one index entry
--   per message, no look-up), stopping once N are taken. A group whose first message lies
--   beyond the front is found there while the front's are busy. (A skip from group to group
--   would read fewer entries, but a recursive query is refused on Citus.)
-- Rows another transaction holds are skipped in both. The clock is read once, in `clock`: Citus
-- refuses a function that is not immutable inside COALESCE. Locked first, then deleted by ctid (as
-- messages_receive_batch.sql).
-- The heads are looked for only when the front's array is empty and the last parameter is 1: a
-- process lets one receive of a queue at a time look, and after a look that took nothing, waits
-- ten times as long as it took before the next (while every group is held, each look would read
-- the whole group index and find nothing).
-- Parameters: 1 Destination (varchar), 2 at most this many rows (bigint), 3 whether to look at the heads (int: 1 yes, 0 no)
-- Returns: MessageId, NULL, NULL, NULL, Body (the envelope), Expired (boolean, by database time), ExpiresAt, GroupKey, the message's place in its group; in VisibleAfter, MessageId order
WITH clock AS MATERIALIZED (
    SELECT (now() AT TIME ZONE 'utc') AS "Now"
), taken AS (
    DELETE FROM {schema}."NimbusMessages" AS queue
    WHERE queue.ctid = ANY(COALESCE(
        NULLIF(ARRAY(
            SELECT q.ctid
            FROM (SELECT w.ctid AS "Row", w."VisibleAfter", w."MessageId"
                  FROM {schema}."NimbusMessages" AS w
                  WHERE w."Destination" = $1 AND w."VisibleAfter" <= (SELECT clock."Now" FROM clock)
                  ORDER BY w."VisibleAfter", w."MessageId"
                  LIMIT 256) AS w
            JOIN {schema}."NimbusMessages" AS q ON q.ctid = w."Row"
            WHERE q."GroupKey" IS NULL OR NOT EXISTS (
                SELECT 1 FROM {schema}."NimbusMessages" AS earlier
                WHERE earlier."Destination" = q."Destination" AND earlier."GroupKey" = q."GroupKey"
                  AND (earlier."GroupPlace" < q."GroupPlace"
                       OR (earlier."GroupPlace" = q."GroupPlace" AND earlier."MessageId" < q."MessageId")))
            ORDER BY w."VisibleAfter", w."MessageId"
            LIMIT $2
            FOR UPDATE OF q SKIP LOCKED), '{}'),
        ARRAY(
            SELECT q.ctid
            FROM (SELECT DISTINCT ON (g."GroupKey") g."GroupKey", g."MessageId"
                  FROM {schema}."NimbusMessages" AS g
                  WHERE g."Destination" = $1 AND g."GroupKey" IS NOT NULL
                  ORDER BY g."GroupKey", g."GroupPlace", g."MessageId") AS groups
            JOIN {schema}."NimbusMessages" AS q ON q."MessageId" = groups."MessageId"
            WHERE $3::int = 1 AND q."VisibleAfter" <= (SELECT clock."Now" FROM clock)
            LIMIT $2
            FOR UPDATE OF q SKIP LOCKED)))
    RETURNING queue."MessageId", queue."Body",
        queue."ExpiresAt", queue."GroupKey", queue."GroupPlace", queue."VisibleAfter")
SELECT "MessageId"::text, NULL::varchar, NULL::varchar, NULL::text, "Body",
    CASE WHEN "ExpiresAt" IS NULL THEN FALSE
         WHEN "ExpiresAt" > (now() AT TIME ZONE 'utc') THEN FALSE
         ELSE TRUE END AS "Expired", "ExpiresAt",
    "GroupKey", "GroupPlace"
FROM taken
ORDER BY "VisibleAfter", "MessageId"
