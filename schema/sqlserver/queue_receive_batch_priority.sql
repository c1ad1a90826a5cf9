-- Deletes and returns up to N rows of a priority queue table, the highest Priority first and the oldest first within a priority,
-- that no other transaction holds (a batched receive: one statement, one transaction, N messages).
-- Parameters: 1 at most this many rows (bigint)
-- Returns: Id, CorrelationId, ReplyToAddress, Headers, Body, Expired (bit, by database time), Expires; highest Priority first, then in RowVersion order
-- The single receive's form (queue_receive.sql) with TOP (@P1) for TOP (1), as SQL Server's
-- documentation deletes the first N rows in an order: DELETE … WHERE key IN (SELECT TOP (n) key
-- … ORDER BY …). The subquery reads WITH (UPDLOCK, READPAST, ROWLOCK), so the rows are locked and
-- other receivers skip them; OUTPUT copies plain columns and RowVersion INTO a table variable
-- (OUTPUT promises no order), and the SELECT returns them highest Priority first, then in RowVersion order. RowVersion is
-- the table's IDENTITY, so IN never matches more than the N rows taken.
DECLARE @messages TABLE (
    [Id]             uniqueidentifier NULL,
    [CorrelationId]  nvarchar(max)    NULL,
    [ReplyToAddress] nvarchar(max)    NULL,
    [Headers]        nvarchar(max)    NULL,
    [Body]           varbinary(max)   NULL,
    [Expires]        datetime2        NULL,
    [RowVersion]     bigint           NOT NULL,
    [Priority]       smallint         NOT NULL
);
DELETE FROM {table} WITH (ROWLOCK, READPAST)
OUTPUT deleted.[Id], deleted.[CorrelationId], deleted.[ReplyToAddress], deleted.[Headers],
    deleted.[Body], deleted.[Expires], deleted.[RowVersion], deleted.[Priority]
INTO @messages
WHERE [RowVersion] IN (
    SELECT TOP (@P1) [RowVersion]
    FROM {table} WITH (UPDLOCK, READPAST, ROWLOCK)
    ORDER BY [Priority] DESC, [RowVersion]);
SELECT [Id], [CorrelationId], [ReplyToAddress], [Headers], [Body],
    CAST(CASE WHEN [Expires] IS NULL THEN 0
              WHEN [Expires] > GETUTCDATE() THEN 0
              ELSE 1 END AS bit) AS [Expired],
    [Expires]
FROM @messages
ORDER BY [Priority] DESC, [RowVersion];
