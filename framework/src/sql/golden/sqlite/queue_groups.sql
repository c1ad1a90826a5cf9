SELECT "GroupKey", count(*) AS "Waiting",
    CASE WHEN max("NotBefore") > strftime('%Y-%m-%d %H:%M:%f', 'now') THEN max("NotBefore") END AS "HeldUntil"
FROM "it's [Wal]] ""rus"""
WHERE "GroupKey" IS NOT NULL
GROUP BY "GroupKey"
ORDER BY count(*) DESC, "GroupKey"
LIMIT ?1