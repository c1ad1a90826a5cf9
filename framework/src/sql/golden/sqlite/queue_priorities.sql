SELECT "Priority", count(*) AS "Waiting"
FROM "it's [Wal]] ""rus"""
GROUP BY "Priority"
ORDER BY "Priority" DESC