WITH clock AS (SELECT (now() AT TIME ZONE 'utc') AS "Now")
UPDATE "Zeb]ra ""x"" 'y'"."NimbusSchedules"
SET "NextDue" = $4,
    "Version" = "Version" + 1,
    "Fired" = "Fired" + $5::bigint,
    "MissedTicks" = "MissedTicks" + $6::bigint,
    "LastDue" = COALESCE($7::timestamp, "LastDue"),
    "LastFiredAt" = CASE WHEN $5::bigint > 0 THEN clock."Now" ELSE "LastFiredAt" END,
    "LastFiredBy" = CASE WHEN $5::bigint > 0 THEN $8::varchar ELSE "LastFiredBy" END
FROM clock
WHERE "Endpoint" = $1 AND "Name" = $2 AND "Version" = $3 AND "PausedAt" IS NULL