-- Deletes and returns the first visible message of a destination (VisibleAfter, then MessageId) that no other transaction holds.
-- Parameters: 1 Destination (varchar)
-- Returns: MessageId (text), CorrelationId (NULL), ReplyToAddress (NULL), Headers (NULL; they travel in the Body's envelope), Body, Expired (boolean, by database time), ExpiresAt
WITH message AS (
    SELECT "MessageId", (now() AT TIME ZONE 'utc') AS "Now" FROM {schema}."NimbusMessages"
    WHERE "Destination" = $1 AND "VisibleAfter" <= (now() AT TIME ZONE 'utc')
    ORDER BY "VisibleAfter", "MessageId"
    LIMIT 1
    FOR UPDATE SKIP LOCKED)
DELETE FROM {schema}."NimbusMessages" AS queue
USING message
WHERE queue."MessageId" = message."MessageId"
RETURNING queue."MessageId"::text, NULL::varchar, NULL::varchar, NULL::text, queue."Body",
    CASE WHEN queue."ExpiresAt" IS NULL THEN FALSE
         WHEN queue."ExpiresAt" > message."Now" THEN FALSE
         ELSE TRUE END AS "Expired",
    queue."ExpiresAt"
