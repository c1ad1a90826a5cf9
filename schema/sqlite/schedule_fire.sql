-- Moves a due schedule on to its next tick, counting what it fired and missed; runs in the
-- transaction that sends the tick's message. Affects no row when another instance moved it
-- first (Version) or an operator paused it: that instance then sends nothing.
-- Parameters: 1 Endpoint (text), 2 Name (text), 3 Version as read (integer), 4 NextDue (text UTC), 5 messages sent (integer: 0 or 1), 6 ticks missed (integer), 7 LastDue: the tick sent for (text UTC, NULL when none), 8 LastFiredBy (text)
UPDATE "NimbusSchedules"
SET "NextDue" = ?4,
    "Version" = "Version" + 1,
    "Fired" = "Fired" + ?5,
    "MissedTicks" = "MissedTicks" + ?6,
    "LastDue" = COALESCE(?7, "LastDue"),
    "LastFiredAt" = CASE WHEN ?5 > 0 THEN strftime('%Y-%m-%d %H:%M:%f', 'now') ELSE "LastFiredAt" END,
    "LastFiredBy" = CASE WHEN ?5 > 0 THEN ?8 ELSE "LastFiredBy" END
WHERE "Endpoint" = ?1 AND "Name" = ?2 AND "Version" = ?3 AND "PausedAt" IS NULL
