SELECT "Id"::text AS "Id", "CorrelationId", "ReplyToAddress", "Headers", "Body", "Expires", "RowVersion"
FROM "Zeb]ra ""x"" 'y'"."it's [Wal]] ""rus"""
ORDER BY "RowVersion"
LIMIT $1