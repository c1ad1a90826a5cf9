-- Deletes and returns the first message of a queue table that keeps both ordered groups and
-- priorities, as queue_receive_grouped.sql chooses one (not waiting, the first of its group), taking the highest
-- Priority first and then the oldest: priorities choose which group goes next, and a group's
-- own messages keep their send order whatever their priorities.
-- Parameters: none
-- Returns: Id (text), CorrelationId, ReplyToAddress, Headers, Body, Expired (boolean, by database time), Expires, GroupKey, the message's place in its group (bigint)
WITH message AS (
    SELECT q."RowVersion", (now() AT TIME ZONE 'utc') AS "Now" FROM {table} AS q
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
    LIMIT 1
    FOR UPDATE OF q SKIP LOCKED)
DELETE FROM {table} AS queue
USING message
WHERE queue."RowVersion" = message."RowVersion"
RETURNING queue."Id"::text, queue."CorrelationId", queue."ReplyToAddress", queue."Headers", queue."Body",
    CASE WHEN queue."Expires" IS NULL THEN FALSE
         WHEN queue."Expires" > message."Now" THEN FALSE
         ELSE TRUE END AS "Expired",
    queue."Expires", queue."GroupKey", COALESCE(queue."GroupPosition", queue."RowVersion")
