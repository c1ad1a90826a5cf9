WITH clock AS (SELECT (now() AT TIME ZONE 'utc') AS "Now")
UPDATE "Zeb]ra ""x"" 'y'"."NimbusDelayedMessages"
SET "Due" = COALESCE($3::timestamp, clock."Now" + COALESCE($2::bigint, 0) * interval '1 millisecond')
FROM clock
WHERE "Id" = $1