WITH due AS (
    SELECT TOP (@P1) *
    FROM [Zeb]]ra "x" 'y'].[NimbusDelayedMessages] WITH (UPDLOCK, READPAST, ROWLOCK)
    WHERE [Due] <= SYSUTCDATETIME()
    ORDER BY [Due], [RowVersion])
DELETE FROM due
OUTPUT deleted.[Id], deleted.[Destination], deleted.[CorrelationId], deleted.[ReplyToAddress],
    deleted.[Expires], deleted.[Headers], deleted.[Body];