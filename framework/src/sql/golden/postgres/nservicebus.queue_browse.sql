SELECT Id::text AS "Id", NULL::varchar AS "CorrelationId", NULL::varchar AS "ReplyToAddress",
    Headers AS "Headers", Body AS "Body", Expires AS "Expires", Seq::bigint AS "Seq"
FROM "Zeb]ra ""x"" 'y'"."it's [Wal]] ""rus"""
ORDER BY Seq
LIMIT $1