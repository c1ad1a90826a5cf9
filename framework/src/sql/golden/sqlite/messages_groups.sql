SELECT "GroupKey", count(*) AS "Waiting",
    max(CASE WHEN "VisibleAfter" > strftime('%Y-%m-%d %H:%M:%f', 'now')
              AND "GroupPlace" < CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000
             THEN "VisibleAfter" END) AS "HeldUntil"
FROM "NimbusMessages"
WHERE "Destination" = ?1 AND "GroupKey" IS NOT NULL
GROUP BY "GroupKey"
ORDER BY count(*) DESC, "GroupKey"
LIMIT ?2