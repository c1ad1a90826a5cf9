WITH message AS (
    SELECT "MessageId" FROM "NimbusMessages"
    WHERE "Destination" = ?1 AND "VisibleAfter" <= strftime('%Y-%m-%d %H:%M:%f', 'now')
    ORDER BY "Priority" DESC, "VisibleAfter", "MessageId"
    LIMIT 1)
DELETE FROM "NimbusMessages"
WHERE "MessageId" IN (SELECT "MessageId" FROM message)
RETURNING "MessageId", NULL, NULL, NULL, "Body",
    CASE WHEN "ExpiresAt" IS NULL THEN 0
         WHEN "ExpiresAt" > strftime('%Y-%m-%d %H:%M:%f', 'now') THEN 0
         ELSE 1 END AS "Expired",
    "ExpiresAt"