-- How many of a limit's slots exist, and in how many ms the soonest one is ready again.
-- Parameters: 1 Scope (text), 2 slots (integer)
-- Returns: Slots (integer), ReadyInMs (integer, NULL when there is no slot)
SELECT COUNT(*),
    CAST((julianday(MIN("ReadyAt")) - julianday('now')) * 86400000.0 AS INTEGER)
FROM "NimbusLimits"
WHERE "Scope" = ?1 AND "Slot" >= 0 AND "Slot" < ?2
