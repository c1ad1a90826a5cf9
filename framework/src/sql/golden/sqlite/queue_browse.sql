SELECT "Id", "CorrelationId", "ReplyToAddress", "Headers", "Body", "Expires", "RowVersion"
FROM "it's [Wal]] ""rus"""
ORDER BY "RowVersion"
LIMIT ?1