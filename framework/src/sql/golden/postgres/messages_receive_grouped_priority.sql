WITH message AS (
    SELECT q."MessageId", (now() AT TIME ZONE 'utc') AS "Now" FROM "Zeb]ra ""x"" 'y'"."NimbusMessages" AS q
    WHERE q."Destination" = $1 AND q."VisibleAfter" <= (now() AT TIME ZONE 'utc')
      AND (q."GroupKey" IS NULL OR NOT EXISTS (
          SELECT 1 FROM "Zeb]ra ""x"" 'y'"."NimbusMessages" AS earlier
          WHERE earlier."Destination" = q."Destination" AND earlier."GroupKey" = q."GroupKey"
            AND (earlier."GroupPlace" < q."GroupPlace"
                 OR (earlier."GroupPlace" = q."GroupPlace" AND earlier."MessageId" < q."MessageId"))))
    ORDER BY q."Priority" DESC, q."VisibleAfter", q."MessageId"
    LIMIT 1
    FOR UPDATE OF q SKIP LOCKED)
DELETE FROM "Zeb]ra ""x"" 'y'"."NimbusMessages" AS queue
USING message
WHERE queue."MessageId" = message."MessageId"
RETURNING queue."MessageId"::text, NULL::varchar, NULL::varchar, NULL::text, queue."Body",
    CASE WHEN queue."ExpiresAt" IS NULL THEN FALSE
         WHEN queue."ExpiresAt" > message."Now" THEN FALSE
         ELSE TRUE END AS "Expired",
    queue."ExpiresAt", queue."GroupKey", queue."GroupPlace"