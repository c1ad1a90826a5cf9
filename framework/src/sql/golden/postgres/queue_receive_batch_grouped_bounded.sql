WITH clock AS MATERIALIZED (
    SELECT (now() AT TIME ZONE 'utc') AS "Now"
), taken AS (
    DELETE FROM "Zeb]ra ""x"" 'y'"."it's [Wal]] ""rus""" AS queue
    WHERE queue.ctid = ANY(COALESCE(
        NULLIF(ARRAY(
            SELECT q.ctid
            FROM (SELECT w.ctid AS "Row", w."RowVersion" FROM "Zeb]ra ""x"" 'y'"."it's [Wal]] ""rus""" AS w
                  ORDER BY w."RowVersion"
                  LIMIT 256) AS w
            JOIN "Zeb]ra ""x"" 'y'"."it's [Wal]] ""rus""" AS q ON q.ctid = w."Row"
            WHERE (q."NotBefore" IS NULL OR q."NotBefore" <= (SELECT clock."Now" FROM clock))
              AND (q."GroupKey" IS NULL OR (
                  NOT EXISTS (
                      SELECT 1 FROM "Zeb]ra ""x"" 'y'"."it's [Wal]] ""rus""" AS older
                      WHERE older."GroupKey" = q."GroupKey"
                        AND older."RowVersion" < COALESCE(q."GroupPosition", q."RowVersion"))
                  AND NOT EXISTS (
                      SELECT 1 FROM "Zeb]ra ""x"" 'y'"."it's [Wal]] ""rus""" AS older
                      WHERE older."GroupPosition" IS NOT NULL AND older."GroupKey" = q."GroupKey"
                        AND older."GroupPosition" < COALESCE(q."GroupPosition", q."RowVersion"))))
            ORDER BY w."RowVersion"
            LIMIT $1
            FOR UPDATE OF q SKIP LOCKED), '{}'),
        ARRAY(
            SELECT q.ctid
            FROM (SELECT DISTINCT ON (g."GroupKey") g."GroupKey", g."RowVersion"
                  FROM "Zeb]ra ""x"" 'y'"."it's [Wal]] ""rus""" AS g
                  WHERE g."GroupKey" IS NOT NULL
                  ORDER BY g."GroupKey", g."RowVersion") AS groups
            CROSS JOIN LATERAL (
                SELECT groups."RowVersion"
                UNION ALL
                (SELECT r."RowVersion" FROM "Zeb]ra ""x"" 'y'"."it's [Wal]] ""rus""" AS r
                 WHERE r."GroupPosition" IS NOT NULL AND r."GroupKey" = groups."GroupKey"
                 ORDER BY r."GroupPosition"
                 LIMIT 1)) AS candidate
            JOIN "Zeb]ra ""x"" 'y'"."it's [Wal]] ""rus""" AS q ON q."RowVersion" = candidate."RowVersion"
            WHERE $2::int = 1
              AND (q."NotBefore" IS NULL OR q."NotBefore" <= (SELECT clock."Now" FROM clock))
              AND groups."RowVersion" >= COALESCE(q."GroupPosition", q."RowVersion")
              AND NOT EXISTS (
                  SELECT 1 FROM "Zeb]ra ""x"" 'y'"."it's [Wal]] ""rus""" AS older
                  WHERE older."GroupPosition" IS NOT NULL AND older."GroupKey" = q."GroupKey"
                    AND older."GroupPosition" < COALESCE(q."GroupPosition", q."RowVersion"))
            LIMIT $1
            FOR UPDATE OF q SKIP LOCKED)))
    RETURNING queue."Id"::text AS "Id", queue."CorrelationId", queue."ReplyToAddress",
        queue."Headers", queue."Body",
        queue."Expires", queue."GroupKey",
        COALESCE(queue."GroupPosition", queue."RowVersion") AS "Place", queue."RowVersion")
SELECT "Id", "CorrelationId", "ReplyToAddress", "Headers", "Body",
    CASE WHEN "Expires" IS NULL THEN FALSE
         WHEN "Expires" > (now() AT TIME ZONE 'utc') THEN FALSE
         ELSE TRUE END AS "Expired", "Expires", "GroupKey", "Place"
FROM taken
ORDER BY "RowVersion"