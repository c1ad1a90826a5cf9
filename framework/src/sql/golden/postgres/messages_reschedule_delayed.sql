WITH clock AS (SELECT (now() AT TIME ZONE 'utc') AS "Now")
UPDATE "Zeb]ra ""x"" 'y'"."NimbusMessages"
SET "VisibleAfter" = COALESCE($3::timestamp, clock."Now" + COALESCE($2::bigint, 0) * interval '1 millisecond')
FROM clock
WHERE "MessageId" = $1 AND "VisibleAfter" > clock."Now"