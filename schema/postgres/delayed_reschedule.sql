-- Moves the due time of a delayed message still waiting in NimbusDelayedMessages: 1 row when it was pending, 0 when it was delivered or never existed.
-- Parameters: 1 Id (uuid), 2 delay in ms from now (bigint, NULL for none), 3 absolute due time (timestamp UTC, NULL for none; wins over 2)
WITH clock AS (SELECT (now() AT TIME ZONE 'utc') AS "Now")
UPDATE {schema}."NimbusDelayedMessages"
SET "Due" = COALESCE($3::timestamp, clock."Now" + COALESCE($2::bigint, 0) * interval '1 millisecond')
FROM clock
WHERE "Id" = $1
