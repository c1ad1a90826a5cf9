SELECT "Priority", count(*) AS "Waiting"
FROM "NimbusMessages"
WHERE "Destination" = ?1
GROUP BY "Priority"
ORDER BY "Priority" DESC