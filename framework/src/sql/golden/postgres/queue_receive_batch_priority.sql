WITH taken AS (
    DELETE FROM "Zeb]ra ""x"" 'y'"."it's [Wal]] ""rus""" AS queue
    WHERE queue.ctid = ANY(ARRAY(
        SELECT ctid FROM "Zeb]ra ""x"" 'y'"."it's [Wal]] ""rus"""
        ORDER BY "Priority" DESC, "RowVersion"
        LIMIT $1
        FOR UPDATE SKIP LOCKED))
    RETURNING queue."Id"::text AS "Id", queue."CorrelationId", queue."ReplyToAddress",
        queue."Headers", queue."Body",
        queue."Expires", queue."RowVersion", queue."Priority")
SELECT "Id", "CorrelationId", "ReplyToAddress", "Headers", "Body",
    CASE WHEN "Expires" IS NULL THEN FALSE
         WHEN "Expires" > (now() AT TIME ZONE 'utc') THEN FALSE
         ELSE TRUE END AS "Expired", "Expires"
FROM taken
ORDER BY "Priority" DESC, "RowVersion"