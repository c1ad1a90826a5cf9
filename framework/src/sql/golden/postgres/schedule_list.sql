SELECT s."Endpoint", s."Name", s."Cron", s."EveryMs", s."Target", s."Missed", s."NextDue",
    s."Version", s."Fired", s."MissedTicks", s."LastDue", s."LastFiredAt", s."LastFiredBy",
    s."PausedAt", s."PausedBy", clock."Now"
FROM (SELECT (now() AT TIME ZONE 'utc') AS "Now") AS clock
LEFT JOIN "Zeb]ra ""x"" 'y'"."NimbusSchedules" AS s
    ON s."Endpoint" = COALESCE($1::varchar, s."Endpoint")
ORDER BY s."Endpoint", s."Name"