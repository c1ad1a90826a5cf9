WITH taken AS (
    DELETE FROM "Zeb]ra ""x"" 'y'"."NimbusMessages" AS queue
    WHERE queue.ctid = ANY(ARRAY(
        SELECT q.ctid FROM "Zeb]ra ""x"" 'y'"."NimbusMessages" AS q
        WHERE q."Destination" = $1 AND q."VisibleAfter" <= (now() AT TIME ZONE 'utc')
          AND (q."GroupKey" IS NULL OR NOT EXISTS (
              SELECT 1 FROM "Zeb]ra ""x"" 'y'"."NimbusMessages" AS earlier
              WHERE earlier."Destination" = q."Destination" AND earlier."GroupKey" = q."GroupKey"
                AND (earlier."GroupPlace" < q."GroupPlace"
                     OR (earlier."GroupPlace" = q."GroupPlace" AND earlier."MessageId" < q."MessageId"))))
        ORDER BY q."VisibleAfter", q."MessageId"
        LIMIT $2
        FOR UPDATE OF q SKIP LOCKED))
    RETURNING queue."MessageId", queue."Body",
        queue."ExpiresAt", queue."GroupKey", queue."GroupPlace", queue."VisibleAfter")
SELECT "MessageId"::text, NULL::varchar, NULL::varchar, NULL::text, "Body",
    CASE WHEN "ExpiresAt" IS NULL THEN FALSE
         WHEN "ExpiresAt" > (now() AT TIME ZONE 'utc') THEN FALSE
         ELSE TRUE END AS "Expired", "ExpiresAt",
    "GroupKey", "GroupPlace"
FROM taken
ORDER BY "VisibleAfter", "MessageId"