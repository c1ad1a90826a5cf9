-- Lists the schedules of one endpoint (or of every endpoint when the parameter is NULL), each
-- with the database's time now; one row of NULLs but for Now when there are none.
-- Parameters: 1 Endpoint (text, NULL for all)
-- Returns: Endpoint, Name, Cron, EveryMs, Target, Missed, NextDue, Version, Fired, MissedTicks,
-- LastDue, LastFiredAt, LastFiredBy, PausedAt, PausedBy, Now
SELECT s."Endpoint", s."Name", s."Cron", s."EveryMs", s."Target", s."Missed", s."NextDue",
    s."Version", s."Fired", s."MissedTicks", s."LastDue", s."LastFiredAt", s."LastFiredBy",
    s."PausedAt", s."PausedBy", clock."Now"
FROM (SELECT strftime('%Y-%m-%d %H:%M:%f', 'now') AS "Now") AS clock
LEFT JOIN "NimbusSchedules" AS s
    ON s."Endpoint" = COALESCE(?1, s."Endpoint")
ORDER BY s."Endpoint", s."Name"
