-- Returns the first rows of a queue table by RowVersion, without removing them.
-- Parameters: 1 max rows (bigint)
-- Returns: Id (text), CorrelationId, ReplyToAddress, Headers, Body, Expires, RowVersion
SELECT "Id"::text AS "Id", "CorrelationId", "ReplyToAddress", "Headers", "Body", "Expires", "RowVersion"
FROM {table}
ORDER BY "RowVersion"
LIMIT $1
