DELETE FROM "Zeb]ra ""x"" 'y'"."it's [Wal]] ""rus""" AS queue
WHERE queue.Id = (
    SELECT Id FROM "Zeb]ra ""x"" 'y'"."it's [Wal]] ""rus"""
    ORDER BY Seq
    LIMIT 1
    FOR UPDATE SKIP LOCKED)
RETURNING queue.Id::text, NULL::varchar AS "CorrelationId", NULL::varchar AS "ReplyToAddress",
    queue.Headers, queue.Body,
    CASE WHEN queue.Expires IS NULL THEN FALSE
         WHEN queue.Expires > (now() AT TIME ZONE 'utc') THEN FALSE
         ELSE TRUE END AS "Expired",
    queue.Expires