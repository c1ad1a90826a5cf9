WITH taken AS (
    DELETE FROM "Zeb]ra ""x"" 'y'"."NimbusMessages" AS queue
    WHERE queue.ctid = ANY(ARRAY(
        SELECT ctid FROM "Zeb]ra ""x"" 'y'"."NimbusMessages"
        WHERE "Destination" = $1 AND "VisibleAfter" <= (now() AT TIME ZONE 'utc')
        ORDER BY "Priority" DESC, "VisibleAfter", "MessageId"
        LIMIT $2
        FOR UPDATE SKIP LOCKED))
    RETURNING queue."MessageId", queue."Body",
        queue."ExpiresAt", queue."VisibleAfter", queue."Priority")
SELECT "MessageId"::text, NULL::varchar, NULL::varchar, NULL::text, "Body",
    CASE WHEN "ExpiresAt" IS NULL THEN FALSE
         WHEN "ExpiresAt" > (now() AT TIME ZONE 'utc') THEN FALSE
         ELSE TRUE END AS "Expired", "ExpiresAt"
FROM taken
ORDER BY "Priority" DESC, "VisibleAfter", "MessageId"