-- Deletes at most a batch of limit rows untouched for longer than the given seconds (database
-- time), skipping rows others hold: the slots of keys no longer seen. A limit adds its slots
-- again when it next needs them.
-- DATEADD takes an int: the seconds given are far below its 68 years.
-- Parameters: 1 seconds (bigint), 2 batch size (bigint)
DELETE TOP (@P2) FROM {schema}.[NimbusLimits] WITH (READPAST)
WHERE [ReadyAt] < DATEADD(second, -CAST(@P1 AS int), SYSUTCDATETIME());
