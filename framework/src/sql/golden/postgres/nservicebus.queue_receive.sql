WITH message AS (
    SELECT Id, (now() AT TIME ZONE 'utc') AS "Now" FROM "Zeb]ra ""x"" 'y'"."it's [Wal]] ""rus"""
    ORDER BY Seq
    LIMIT 1
    FOR UPDATE SKIP LOCKED)
DELETE FROM "Zeb]ra ""x"" 'y'"."it's [Wal]] ""rus""" AS queue
USING message
WHERE queue.Id = message.Id
RETURNING queue.Id::text, NULL::varchar AS "CorrelationId", NULL::varchar AS "ReplyToAddress",
    queue.Headers, queue.Body,
    CASE WHEN queue.Expires IS NULL THEN FALSE
         WHEN queue.Expires > message."Now" THEN FALSE
         ELSE TRUE END AS "Expired",
    queue.Expires