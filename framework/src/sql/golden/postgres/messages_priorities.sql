SELECT "Priority"::bigint, count(*)::bigint AS "Waiting"
FROM "Zeb]ra ""x"" 'y'"."NimbusMessages"
WHERE "Destination" = $1
GROUP BY "Priority"
ORDER BY "Priority" DESC