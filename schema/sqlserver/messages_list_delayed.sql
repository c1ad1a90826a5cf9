-- Lists the delayed messages of the shared-table layout (not yet visible), soonest first; rows being received are skipped, not waited for.
-- Parameters: 1 max rows (bigint)
-- Returns: MessageId, Destination, VisibleAfter, Body (the envelope with headers)
SELECT TOP (@P1) [MessageId], [Destination], [VisibleAfter], [Body]
FROM {schema}.[NimbusMessages] WITH (READPAST)
WHERE [VisibleAfter] > SYSUTCDATETIME()
ORDER BY [VisibleAfter], [MessageId];
