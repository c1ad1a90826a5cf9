-- Deletes and returns at most a batch of due delayed messages (Due, then RowVersion order), skipping locked rows.
-- Parameters: 1 batch size (bigint)
-- Returns: Id, Destination, CorrelationId, ReplyToAddress, Expires, Headers, Body
WITH due AS (
    SELECT TOP (@P1) *
    FROM {schema}.[NimbusDelayedMessages] WITH (UPDLOCK, READPAST, ROWLOCK)
    WHERE [Due] <= SYSUTCDATETIME()
    ORDER BY [Due], [RowVersion])
DELETE FROM due
OUTPUT deleted.[Id], deleted.[Destination], deleted.[CorrelationId], deleted.[ReplyToAddress],
    deleted.[Expires], deleted.[Headers], deleted.[Body];
