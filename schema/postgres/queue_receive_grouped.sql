-- Deletes and returns the oldest row of a grouped queue table that no other transaction holds,
-- is not waiting (NotBefore), and is the first of its group: no row of its group is older
-- (by RowVersion, or by the GroupPosition a retry copy keeps), whether or not another
-- transaction holds that row. A message being handled stays in the table until its receive
-- commits, so the next of its group waits until then, on every receiver and instance.
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
    ORDER BY q."RowVersion"
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
