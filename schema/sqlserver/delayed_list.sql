-- Lists the delayed messages waiting in NimbusDelayedMessages, soonest due first; rows being moved are skipped, not waited for.
-- Parameters: 1 max rows (bigint)
-- Returns: Id, Destination, Due, Headers
SELECT TOP (@P1) [Id], [Destination], [Due], [Headers]
FROM {schema}.[NimbusDelayedMessages] WITH (READPAST)
ORDER BY [Due], [RowVersion];
