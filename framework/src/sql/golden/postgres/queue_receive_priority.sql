WITH message AS (
    SELECT "RowVersion", (now() AT TIME ZONE 'utc') AS "Now" FROM "Zeb]ra ""x"" 'y'"."it's [Wal]] ""rus"""
    ORDER BY "Priority" DESC, "RowVersion"
    LIMIT 1
    FOR UPDATE SKIP LOCKED)
DELETE FROM "Zeb]ra ""x"" 'y'"."it's [Wal]] ""rus""" AS queue
USING message
WHERE queue."RowVersion" = message."RowVersion"
RETURNING queue."Id"::text, queue."CorrelationId", queue."ReplyToAddress", queue."Headers", queue."Body",
    CASE WHEN queue."Expires" IS NULL THEN FALSE
         WHEN queue."Expires" > message."Now" THEN FALSE
         ELSE TRUE END AS "Expired",
    queue."Expires"