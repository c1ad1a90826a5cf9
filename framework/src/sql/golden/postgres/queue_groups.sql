SELECT "GroupKey", count(*)::bigint AS "Waiting",
    CASE WHEN max("NotBefore") > (now() AT TIME ZONE 'utc') THEN max("NotBefore") END AS "HeldUntil"
FROM "Zeb]ra ""x"" 'y'"."it's [Wal]] ""rus"""
WHERE "GroupKey" IS NOT NULL
GROUP BY "GroupKey"
ORDER BY count(*) DESC, "GroupKey"
LIMIT $1