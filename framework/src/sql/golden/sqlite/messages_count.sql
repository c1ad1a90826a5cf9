SELECT count(*) AS "Count"
FROM "NimbusMessages"
WHERE "Destination" = ?1