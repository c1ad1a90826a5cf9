-- Returns the first rows of a queue table by Seq, without removing them.
-- Parameters: 1 max rows (bigint)
-- Returns: Id (text), CorrelationId, ReplyToAddress (always NULL), Headers, Body, Expires, Seq
SELECT Id::text AS "Id", NULL::varchar AS "CorrelationId", NULL::varchar AS "ReplyToAddress",
    Headers AS "Headers", Body AS "Body", Expires AS "Expires", Seq::bigint AS "Seq"
FROM {table}
ORDER BY Seq
LIMIT $1
