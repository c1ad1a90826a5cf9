SELECT count(*) AS "Count"
FROM "Zeb]ra ""x"" 'y'"."NimbusMessages"
WHERE "Destination" = $1