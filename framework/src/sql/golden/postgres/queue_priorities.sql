SELECT "Priority"::bigint, count(*)::bigint AS "Waiting"
FROM "Zeb]ra ""x"" 'y'"."it's [Wal]] ""rus"""
GROUP BY "Priority"
ORDER BY "Priority" DESC