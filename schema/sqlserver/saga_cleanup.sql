-- Deletes at most a batch of saga instances that completed longer ago than the given time
-- (database time), skipping rows others hold.
-- DATEADD takes an int: the time is far below its 68 years.
-- Parameters: 1 how long in seconds (bigint), 2 batch size (bigint)
DELETE FROM {schema}.[NimbusSagas]
WHERE [Id] IN (
    SELECT TOP (@P2) [Id] FROM {schema}.[NimbusSagas] WITH (READPAST)
    WHERE [CompletedAt] < DATEADD(second, -CAST(@P1 AS int), SYSUTCDATETIME()));
