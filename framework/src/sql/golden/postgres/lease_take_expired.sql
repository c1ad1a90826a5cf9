WITH lapsed AS (
    SELECT "LeaseId", (now() AT TIME ZONE 'utc') AS "Now" FROM "Zeb]ra ""x"" 'y'"."NimbusLeases"
    WHERE "Queue" = $1 AND "LeasedUntil" < (now() AT TIME ZONE 'utc')
    ORDER BY "LeasedUntil"
    LIMIT 1
    FOR UPDATE SKIP LOCKED)
DELETE FROM "Zeb]ra ""x"" 'y'"."NimbusLeases" AS lease
USING lapsed
WHERE lease."LeaseId" = lapsed."LeaseId"
RETURNING lease."Id", lease."CorrelationId", lease."ReplyToAddress", lease."Headers", lease."Body",
    CASE WHEN lease."Expires" IS NULL THEN FALSE
         WHEN lease."Expires" > lapsed."Now" THEN FALSE
         ELSE TRUE END AS "Expired",
    lease."Expires"