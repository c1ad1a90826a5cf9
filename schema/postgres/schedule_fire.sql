-- Moves a due schedule on to its next tick, counting what it fired and missed; runs in the
-- transaction that sends the tick's message. Affects no row when another instance moved it
-- first (Version) or an operator paused it: that instance then sends nothing.
-- Parameters: 1 Endpoint (varchar), 2 Name (varchar), 3 Version as read (bigint), 4 NextDue (timestamp UTC), 5 messages sent (bigint: 0 or 1), 6 ticks missed (bigint), 7 LastDue: the tick sent for (timestamp UTC, NULL when none), 8 LastFiredBy (varchar)
WITH clock AS (SELECT (now() AT TIME ZONE 'utc') AS "Now")
UPDATE {schema}."NimbusSchedules"
SET "NextDue" = $4,
    "Version" = "Version" + 1,
    "Fired" = "Fired" + $5::bigint,
    "MissedTicks" = "MissedTicks" + $6::bigint,
    "LastDue" = COALESCE($7::timestamp, "LastDue"),
    "LastFiredAt" = CASE WHEN $5::bigint > 0 THEN clock."Now" ELSE "LastFiredAt" END,
    "LastFiredBy" = CASE WHEN $5::bigint > 0 THEN $8::varchar ELSE "LastFiredBy" END
FROM clock
WHERE "Endpoint" = $1 AND "Name" = $2 AND "Version" = $3 AND "PausedAt" IS NULL
