SELECT "GroupKey", count(*)::bigint AS "Waiting",
    max(CASE WHEN "VisibleAfter" > (now() AT TIME ZONE 'utc')
              AND "GroupPlace" < (extract(epoch FROM now() AT TIME ZONE 'utc') * 1000000)::bigint
             THEN "VisibleAfter" END) AS "HeldUntil"
FROM "Zeb]ra ""x"" 'y'"."NimbusMessages"
WHERE "Destination" = $1 AND "GroupKey" IS NOT NULL
GROUP BY "GroupKey"
ORDER BY count(*) DESC, "GroupKey"
LIMIT $2