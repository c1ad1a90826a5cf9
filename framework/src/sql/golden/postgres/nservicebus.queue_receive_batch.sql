WITH taken AS (
    DELETE FROM "Zeb]ra ""x"" 'y'"."it's [Wal]] ""rus""" AS queue
    WHERE queue.ctid = ANY(ARRAY(
        SELECT ctid FROM "Zeb]ra ""x"" 'y'"."it's [Wal]] ""rus"""
        ORDER BY Seq
        LIMIT $1
        FOR UPDATE SKIP LOCKED))
    RETURNING queue.Id::text AS "Id", queue.Headers AS "Headers", queue.Body AS "Body",
        queue.Expires AS "Expires", queue.Seq AS "Seq")
SELECT "Id", NULL::varchar AS "CorrelationId", NULL::varchar AS "ReplyToAddress", "Headers",
    "Body",
    CASE WHEN "Expires" IS NULL THEN FALSE
         WHEN "Expires" > (now() AT TIME ZONE 'utc') THEN FALSE
         ELSE TRUE END AS "Expired", "Expires"
FROM taken
ORDER BY "Seq"