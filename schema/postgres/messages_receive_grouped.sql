-- Deletes and returns the first visible message of a destination (VisibleAfter, then MessageId)
-- that no other transaction holds and that is the first of its group: no row of its group in
-- its destination has an earlier place (GroupPlace, then MessageId), whether or not another
-- transaction holds that row or it waits for its VisibleAfter (shared-table layout). A message
-- being handled stays in the table until its receive commits, so the next of its group waits
-- until then, on every receiver and instance.
-- Parameters: 1 Destination (varchar)
-- Returns: MessageId (text), CorrelationId (NULL), ReplyToAddress (NULL), Headers (NULL; they travel in the Body's envelope), Body, Expired (boolean, by database time), ExpiresAt, GroupKey, the message's place in its group (bigint)
WITH message AS (
    SELECT q."MessageId", (now() AT TIME ZONE 'utc') AS "Now" FROM {schema}."NimbusMessages" AS q
    WHERE q."Destination" = $1 AND q."VisibleAfter" <= (now() AT TIME ZONE 'utc')
      AND (q."GroupKey" IS NULL OR NOT EXISTS (
          SELECT 1 FROM {schema}."NimbusMessages" AS earlier
          WHERE earlier."Destination" = q."Destination" AND earlier."GroupKey" = q."GroupKey"
            AND (earlier."GroupPlace" < q."GroupPlace"
                 OR (earlier."GroupPlace" = q."GroupPlace" AND earlier."MessageId" < q."MessageId"))))
    ORDER BY q."VisibleAfter", q."MessageId"
    LIMIT 1
    FOR UPDATE OF q SKIP LOCKED)
DELETE FROM {schema}."NimbusMessages" AS queue
USING message
WHERE queue."MessageId" = message."MessageId"
RETURNING queue."MessageId"::text, NULL::varchar, NULL::varchar, NULL::text, queue."Body",
    CASE WHEN queue."ExpiresAt" IS NULL THEN FALSE
         WHEN queue."ExpiresAt" > message."Now" THEN FALSE
         ELSE TRUE END AS "Expired",
    queue."ExpiresAt", queue."GroupKey", queue."GroupPlace"
