-- How many of a limit's slots exist, and in how many ms the soonest one is ready again (0 or
-- less: ready, and held by another transaction), read without waiting for any lock (a slot
-- another transaction is taking is read as it stands).
-- Parameters: 1 Scope (nvarchar(400)), 2 slots (bigint)
-- Returns: Slots (bigint), ReadyInMs (bigint, NULL when there is no slot)
SELECT CAST(COUNT(*) AS bigint),
    CAST(DATEDIFF(millisecond, SYSUTCDATETIME(), MIN([ReadyAt])) AS bigint)
FROM {schema}.[NimbusLimits] WITH (NOLOCK)
WHERE [Scope] = @P1 AND [Slot] >= 0 AND [Slot] < @P2;
