-- Deletes and returns the row of a priority queue table with the highest Priority, the oldest of those,
-- that no other transaction holds.
-- Parameters: none
-- Returns: Id, CorrelationId, ReplyToAddress, Headers, Body, Expired (bit, by database time), Expires
-- One form for SQL Server and Babelfish (README, "SQL Server beside NServiceBus"): the row is the
-- TOP (1) by RowVersion of a subquery WITH (UPDLOCK, READPAST, ROWLOCK), so it is locked and
-- other receivers skip it; one DELETE removes it (READPAST there too, so a table without its
-- RowVersion index never waits for rows other receivers hold) and OUTPUT copies its plain
-- columns INTO a table variable; Expired is computed by the SELECT that returns the row, never
-- inside OUTPUT. The table variable's columns are wide enough for any seed 000 table.
DECLARE @message TABLE (
    [Id]             uniqueidentifier NULL,
    [CorrelationId]  nvarchar(max)    NULL,
    [ReplyToAddress] nvarchar(max)    NULL,
    [Headers]        nvarchar(max)    NULL,
    [Body]           varbinary(max)   NULL,
    [Expires]        datetime2        NULL
);
DELETE FROM {table} WITH (ROWLOCK, READPAST)
OUTPUT deleted.[Id], deleted.[CorrelationId], deleted.[ReplyToAddress], deleted.[Headers],
    deleted.[Body], deleted.[Expires]
INTO @message
WHERE [RowVersion] = (
    SELECT TOP (1) [RowVersion]
    FROM {table} WITH (UPDLOCK, READPAST, ROWLOCK)
    ORDER BY [Priority] DESC, [RowVersion]);
SELECT [Id], [CorrelationId], [ReplyToAddress], [Headers], [Body],
    CAST(CASE WHEN [Expires] IS NULL THEN 0
              WHEN [Expires] > GETUTCDATE() THEN 0
              ELSE 1 END AS bit) AS [Expired],
    [Expires]
FROM @message;
