SELECT count(*) AS "Estimate" FROM (
    SELECT 1 FROM "NimbusMessages"
    WHERE "Destination" = ?1 AND "VisibleAfter" <= strftime('%Y-%m-%d %H:%M:%f', 'now')
    LIMIT 10000)