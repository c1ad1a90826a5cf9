UPDATE "NimbusSchedules"
SET "NextDue" = ?4,
    "Version" = "Version" + 1,
    "Fired" = "Fired" + ?5,
    "MissedTicks" = "MissedTicks" + ?6,
    "LastDue" = COALESCE(?7, "LastDue"),
    "LastFiredAt" = CASE WHEN ?5 > 0 THEN strftime('%Y-%m-%d %H:%M:%f', 'now') ELSE "LastFiredAt" END,
    "LastFiredBy" = CASE WHEN ?5 > 0 THEN ?8 ELSE "LastFiredBy" END
WHERE "Endpoint" = ?1 AND "Name" = ?2 AND "Version" = ?3 AND "PausedAt" IS NULL