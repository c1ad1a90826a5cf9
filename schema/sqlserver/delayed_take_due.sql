-- Deletes and returns at most a batch of due delayed messages (Due, then RowVersion order), skipping locked rows.
-- Parameters: 1 batch size (bigint)
-- Returns: Id, Destination, CorrelationId, ReplyToAddress, Expires, Headers, Body
-- One form for SQL Server and Babelfish, as queue_receive.sql: the rows are the TOP (@P1) of a
-- subquery WITH (UPDLOCK, READPAST, ROWLOCK) in due order; one DELETE removes them (its Due
-- predicate lets it seek Index_Due rather than scan the table) and OUTPUT copies them INTO a
-- table variable, from which the SELECT returns them in due order (OUTPUT itself promises none).
DECLARE @due TABLE (
    [Id]             uniqueidentifier NULL,
    [Destination]    nvarchar(255)    NULL,
    [Due]            datetime2        NULL,
    [CorrelationId]  nvarchar(max)    NULL,
    [ReplyToAddress] nvarchar(max)    NULL,
    [Expires]        datetime2        NULL,
    [Headers]        nvarchar(max)    NULL,
    [Body]           varbinary(max)   NULL,
    [RowVersion]     bigint           NULL
);
DELETE FROM {schema}.[NimbusDelayedMessages] WITH (ROWLOCK, READPAST)
OUTPUT deleted.[Id], deleted.[Destination], deleted.[Due], deleted.[CorrelationId],
    deleted.[ReplyToAddress], deleted.[Expires], deleted.[Headers], deleted.[Body],
    deleted.[RowVersion]
INTO @due
WHERE [Due] <= SYSUTCDATETIME() AND [RowVersion] IN (
    SELECT TOP (@P1) [RowVersion]
    FROM {schema}.[NimbusDelayedMessages] WITH (UPDLOCK, READPAST, ROWLOCK)
    WHERE [Due] <= SYSUTCDATETIME()
    ORDER BY [Due], [RowVersion]);
SELECT [Id], [Destination], [CorrelationId], [ReplyToAddress], [Expires], [Headers], [Body]
FROM @due
ORDER BY [Due], [RowVersion];
