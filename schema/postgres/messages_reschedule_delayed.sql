-- Moves the VisibleAfter of a delayed message of the shared-table layout while it is not yet visible: 1 row when it was pending, 0 when it was visible already or never existed.
-- Parameters: 1 MessageId (uuid), 2 delay in ms from now (bigint, NULL for none), 3 absolute time (timestamp UTC, NULL for none; wins over 2)
WITH clock AS (SELECT (now() AT TIME ZONE 'utc') AS "Now")
UPDATE {schema}."NimbusMessages"
SET "VisibleAfter" = COALESCE($3::timestamp, clock."Now" + COALESCE($2::bigint, 0) * interval '1 millisecond')
FROM clock
WHERE "MessageId" = $1 AND "VisibleAfter" > clock."Now"
