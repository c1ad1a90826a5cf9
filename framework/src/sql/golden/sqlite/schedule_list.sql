SELECT s."Endpoint", s."Name", s."Cron", s."EveryMs", s."Target", s."Missed", s."NextDue",
    s."Version", s."Fired", s."MissedTicks", s."LastDue", s."LastFiredAt", s."LastFiredBy",
    s."PausedAt", s."PausedBy", clock."Now"
FROM (SELECT strftime('%Y-%m-%d %H:%M:%f', 'now') AS "Now") AS clock
LEFT JOIN "NimbusSchedules" AS s
    ON s."Endpoint" = COALESCE(?1, s."Endpoint")
ORDER BY s."Endpoint", s."Name"