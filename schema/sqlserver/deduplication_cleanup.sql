-- Deletes at most a batch of keys whose window ended longer ago than the given seconds
-- (database time), skipping rows others hold.
-- DATEADD takes an int: the seconds given are far below its 68 years.
-- Parameters: 1 seconds past the end of the window (bigint), 2 batch size (bigint)
DELETE TOP (@P2) FROM {schema}.[NimbusDeduplication] WITH (READPAST)
WHERE [ExpiresAt] < DATEADD(second, -CAST(@P1 AS int), SYSUTCDATETIME());
