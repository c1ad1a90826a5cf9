WITH lapsed AS (
    SELECT "LeaseId" FROM "NimbusLeases"
    WHERE "Queue" = ?1 AND "LeasedUntil" < strftime('%Y-%m-%d %H:%M:%f', 'now')
    ORDER BY "LeasedUntil"
    LIMIT 1)
DELETE FROM "NimbusLeases"
WHERE "LeaseId" IN (SELECT "LeaseId" FROM lapsed)
RETURNING "Id", "CorrelationId", "ReplyToAddress", "Headers", "Body",
    CASE WHEN "Expires" IS NULL THEN 0
         WHEN "Expires" > strftime('%Y-%m-%d %H:%M:%f', 'now') THEN 0
         ELSE 1 END AS "Expired",
    "Expires"