-- Lists the schedules of one endpoint (or of every endpoint when the parameter is NULL), each
-- with the database's time now; one row of NULLs but for Now when there are none.
-- Parameters: 1 Endpoint (varchar, NULL for all)
-- Returns: Endpoint, Name, Cron, EveryMs, Target, Missed, NextDue, Version, Fired, MissedTicks,
-- LastDue, LastFiredAt, LastFiredBy, PausedAt, PausedBy, Now
SELECT s."Endpoint", s."Name", s."Cron", s."EveryMs", s."Target", s."Missed", s."NextDue",
    s."Version", s."Fired", s."MissedTicks", s."LastDue", s."LastFiredAt", s."LastFiredBy",
    s."PausedAt", s."PausedBy", clock."Now"
FROM (SELECT (now() AT TIME ZONE 'utc') AS "Now") AS clock
LEFT JOIN {schema}."NimbusSchedules" AS s
    ON s."Endpoint" = COALESCE($1::varchar, s."Endpoint")
ORDER BY s."Endpoint", s."Name"
