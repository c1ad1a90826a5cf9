-- Deletes the rows of buses not seen (stopped, or silent) for the given time, by database time.
-- DATEADD takes an int: the time is far below its 68 years.
-- Parameters: 1 how long in seconds (bigint)
DELETE FROM {schema}.[NimbusInstances]
WHERE [LastSeenAt] < DATEADD(second, -CAST(@P1 AS int), SYSUTCDATETIME());
