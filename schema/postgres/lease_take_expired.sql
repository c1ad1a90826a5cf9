-- Deletes and returns the longest-expired lease of a queue (by database time), skipping leases other transactions hold, in a transaction that stays open until its message is retried or dead-lettered.
-- Parameters: 1 Queue (varchar)
-- Returns: Id (text), CorrelationId, ReplyToAddress, Headers, Body, Expired (boolean, by database time), Expires
WITH lapsed AS (
    SELECT "LeaseId", (now() AT TIME ZONE 'utc') AS "Now" FROM {schema}."NimbusLeases"
    WHERE "Queue" = $1 AND "LeasedUntil" < (now() AT TIME ZONE 'utc')
    ORDER BY "LeasedUntil"
    LIMIT 1
    FOR UPDATE SKIP LOCKED)
DELETE FROM {schema}."NimbusLeases" AS lease
USING lapsed
WHERE lease."LeaseId" = lapsed."LeaseId"
RETURNING lease."Id", lease."CorrelationId", lease."ReplyToAddress", lease."Headers", lease."Body",
    CASE WHEN lease."Expires" IS NULL THEN FALSE
         WHEN lease."Expires" > lapsed."Now" THEN FALSE
         ELSE TRUE END AS "Expired",
    lease."Expires"
