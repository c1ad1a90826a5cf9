-- Deletes at most a batch of bodies stored apart whose message expired longer ago than the
-- given seconds (database time), skipping rows others hold: their messages are gone, or are discarded unread.
-- DATEADD takes an int: the seconds given are far below its 68 years.
-- Parameters: 1 seconds (bigint), 2 batch size (bigint)
DELETE TOP (@P2) FROM {schema}.[NimbusBodies] WITH (READPAST)
WHERE [Expires] < DATEADD(second, -CAST(@P1 AS int), SYSUTCDATETIME());
