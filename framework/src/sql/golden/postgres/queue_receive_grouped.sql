WITH message AS (
    SELECT q."RowVersion", (now() AT TIME ZONE 'utc') AS "Now" FROM "Zeb]ra ""x"" 'y'"."it's [Wal]] ""rus""" AS q
    WHERE (q."NotBefore" IS NULL OR q."NotBefore" <= (now() AT TIME ZONE 'utc'))
      AND (q."GroupKey" IS NULL OR (
          NOT EXISTS (
              SELECT 1 FROM "Zeb]ra ""x"" 'y'"."it's [Wal]] ""rus""" AS older
              WHERE older."GroupKey" = q."GroupKey"
                AND older."RowVersion" < COALESCE(q."GroupPosition", q."RowVersion"))
          AND NOT EXISTS (
              SELECT 1 FROM "Zeb]ra ""x"" 'y'"."it's [Wal]] ""rus""" AS older
              WHERE older."GroupKey" = q."GroupKey"
                AND older."GroupPosition" < COALESCE(q."GroupPosition", q."RowVersion"))))
    ORDER BY q."RowVersion"
    LIMIT 1
    FOR UPDATE OF q SKIP LOCKED)
DELETE FROM "Zeb]ra ""x"" 'y'"."it's [Wal]] ""rus""" AS queue
USING message
WHERE queue."RowVersion" = message."RowVersion"
RETURNING queue."Id"::text, queue."CorrelationId", queue."ReplyToAddress", queue."Headers", queue."Body",
    CASE WHEN queue."Expires" IS NULL THEN FALSE
         WHEN queue."Expires" > message."Now" THEN FALSE
         ELSE TRUE END AS "Expired",
    queue."Expires", queue."GroupKey", COALESCE(queue."GroupPosition", queue."RowVersion")