WITH message AS (
    SELECT "RowVersion" FROM "it's [Wal]] ""rus"""
    ORDER BY "Priority" DESC, "RowVersion"
    LIMIT 1)
DELETE FROM "it's [Wal]] ""rus"""
WHERE "RowVersion" IN (SELECT "RowVersion" FROM message)
RETURNING "Id", "CorrelationId", "ReplyToAddress", "Headers", "Body",
    CASE WHEN "Expires" IS NULL THEN 0
         WHEN "Expires" > strftime('%Y-%m-%d %H:%M:%f', 'now') THEN 0
         ELSE 1 END AS "Expired",
    "Expires"