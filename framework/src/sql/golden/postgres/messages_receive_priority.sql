WITH message AS (
    SELECT "MessageId", (now() AT TIME ZONE 'utc') AS "Now" FROM "Zeb]ra ""x"" 'y'"."NimbusMessages"
    WHERE "Destination" = $1 AND "VisibleAfter" <= (now() AT TIME ZONE 'utc')
    ORDER BY "Priority" DESC, "VisibleAfter", "MessageId"
    LIMIT 1
    FOR UPDATE SKIP LOCKED)
DELETE FROM "Zeb]ra ""x"" 'y'"."NimbusMessages" AS queue
USING message
WHERE queue."MessageId" = message."MessageId"
RETURNING queue."MessageId"::text, NULL::varchar, NULL::varchar, NULL::text, queue."Body",
    CASE WHEN queue."ExpiresAt" IS NULL THEN FALSE
         WHEN queue."ExpiresAt" > message."Now" THEN FALSE
         ELSE TRUE END AS "Expired",
    queue."ExpiresAt"