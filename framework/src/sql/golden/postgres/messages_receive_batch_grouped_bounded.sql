WITH clock AS MATERIALIZED (
    SELECT (now() AT TIME ZONE 'utc') AS "Now"
), taken AS (
    DELETE FROM "Zeb]ra ""x"" 'y'"."NimbusMessages" AS queue
    WHERE queue.ctid = ANY(COALESCE(
        NULLIF(ARRAY(
            SELECT q.ctid
            FROM (SELECT w.ctid AS "Row", w."VisibleAfter", w."MessageId"
                  FROM "Zeb]ra ""x"" 'y'"."NimbusMessages" AS w
                  WHERE w."Destination" = $1 AND w."VisibleAfter" <= (SELECT clock."Now" FROM clock)
                  ORDER BY w."VisibleAfter", w."MessageId"
                  LIMIT 256) AS w
            JOIN "Zeb]ra ""x"" 'y'"."NimbusMessages" AS q ON q.ctid = w."Row"
            WHERE q."GroupKey" IS NULL OR NOT EXISTS (
                SELECT 1 FROM "Zeb]ra ""x"" 'y'"."NimbusMessages" AS earlier
                WHERE earlier."Destination" = q."Destination" AND earlier."GroupKey" = q."GroupKey"
                  AND (earlier."GroupPlace" < q."GroupPlace"
                       OR (earlier."GroupPlace" = q."GroupPlace" AND earlier."MessageId" < q."MessageId")))
            ORDER BY w."VisibleAfter", w."MessageId"
            LIMIT $2
            FOR UPDATE OF q SKIP LOCKED), '{}'),
        ARRAY(
            SELECT q.ctid
            FROM (SELECT DISTINCT ON (g."GroupKey") g."GroupKey", g."MessageId"
                  FROM "Zeb]ra ""x"" 'y'"."NimbusMessages" AS g
                  WHERE g."Destination" = $1 AND g."GroupKey" IS NOT NULL
                  ORDER BY g."GroupKey", g."GroupPlace", g."MessageId") AS groups
            JOIN "Zeb]ra ""x"" 'y'"."NimbusMessages" AS q ON q."MessageId" = groups."MessageId"
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