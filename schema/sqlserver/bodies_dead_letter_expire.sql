-- Deletes at most a batch of bodies stored apart whose dead letter failed longer ago than the
-- retention period (database time), as the dead letters past it are, skipping rows others hold.
-- DATEADD takes an int: the seconds given are far below its 68 years.
-- Parameters: 1 seconds (bigint), 2 batch size (bigint)
DELETE TOP (@P2) FROM {schema}.[NimbusBodies] WITH (READPAST)
WHERE [DeadLetteredAt] < DATEADD(second, -CAST(@P1 AS int), SYSUTCDATETIME());
