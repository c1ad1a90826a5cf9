-- Deletes at most a batch of dead letters that failed longer ago than the retention period
-- (database time), skipping rows others hold (a replay in flight).
-- DATEADD takes an int: retention periods are far below its 68 years.
-- Parameters: 1 the retention period in seconds (bigint), 2 batch size (bigint)
DELETE FROM {schema}.[NimbusDeadLetters]
WHERE [MessageId] IN (
    SELECT TOP (@P2) [MessageId] FROM {schema}.[NimbusDeadLetters] WITH (READPAST)
    WHERE [FailedAt] < DATEADD(second, -CAST(@P1 AS int), SYSUTCDATETIME()));
