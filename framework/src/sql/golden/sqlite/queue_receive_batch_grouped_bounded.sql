WITH message AS (
    SELECT q."RowVersion" FROM "it's [Wal]] ""rus""" AS q
    WHERE (q."NotBefore" IS NULL OR q."NotBefore" <= strftime('%Y-%m-%d %H:%M:%f', 'now'))
      AND (q."GroupKey" IS NULL OR (
          NOT EXISTS (
              SELECT 1 FROM "it's [Wal]] ""rus""" AS older
              WHERE older."GroupKey" = q."GroupKey"
                AND older."RowVersion" < COALESCE(q."GroupPosition", q."RowVersion"))
          AND NOT EXISTS (
              SELECT 1 FROM "it's [Wal]] ""rus""" AS older
              WHERE older."GroupKey" = q."GroupKey"
                AND older."GroupPosition" < COALESCE(q."GroupPosition", q."RowVersion"))))
    ORDER BY q."RowVersion"
    LIMIT ?1)
DELETE FROM "it's [Wal]] ""rus"""
WHERE "RowVersion" IN (SELECT "RowVersion" FROM message)
RETURNING "Id", "CorrelationId", "ReplyToAddress", "Headers", "Body",
    CASE WHEN "Expires" IS NULL THEN 0
         WHEN "Expires" > strftime('%Y-%m-%d %H:%M:%f', 'now') THEN 0
         ELSE 1 END AS "Expired",
    "Expires", "GroupKey", COALESCE("GroupPosition", "RowVersion")