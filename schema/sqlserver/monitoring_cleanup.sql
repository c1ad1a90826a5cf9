-- Deletes at most a batch of monitoring reports written longer ago than the retention period
-- (database time), skipping rows others hold (another instance's cleanup).
-- DATEADD takes an int: retention periods are far below its 68 years.
-- Parameters: 1 the retention period in seconds (bigint), 2 batch size (bigint)
DELETE TOP (@P2) FROM {schema}.[NimbusMonitoring] WITH (READPAST)
WHERE [ReportedAt] < DATEADD(second, -CAST(@P1 AS int), SYSUTCDATETIME());
