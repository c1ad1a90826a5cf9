-- Deletes and returns the first visible message of a destination (VisibleAfter, then MessageId) that no other transaction holds.
-- Parameters: 1 Destination (nvarchar(255))
-- Returns: MessageId, CorrelationId (NULL), ReplyToAddress (NULL), Headers (NULL; they travel in the Body's envelope), Body, Expired (bit, by database time), ExpiresAt
-- The same form as queue_receive.sql, for SQL Server and Babelfish: TOP (1) subquery WITH
-- (UPDLOCK, READPAST, ROWLOCK) in receive order, one DELETE by the primary key, OUTPUT of plain
-- columns INTO a table variable, Expired computed by the SELECT that returns the row.
DECLARE @message TABLE (
    [MessageId] uniqueidentifier NULL,
    [Body]      varbinary(max)   NULL,
    [ExpiresAt] datetime2        NULL
);
DELETE FROM {schema}.[NimbusMessages] WITH (ROWLOCK, READPAST)
OUTPUT deleted.[MessageId], deleted.[Body], deleted.[ExpiresAt]
INTO @message
WHERE [MessageId] = (
    SELECT TOP (1) [MessageId]
    FROM {schema}.[NimbusMessages] WITH (UPDLOCK, READPAST, ROWLOCK)
    WHERE [Destination] = @P1 AND [VisibleAfter] <= SYSUTCDATETIME()
    ORDER BY [VisibleAfter], [MessageId]);
SELECT [MessageId], CAST(NULL AS varchar(255)) AS [CorrelationId],
    CAST(NULL AS varchar(255)) AS [ReplyToAddress], CAST(NULL AS nvarchar(max)) AS [Headers],
    [Body],
    CAST(CASE WHEN [ExpiresAt] IS NULL THEN 0
              WHEN [ExpiresAt] > SYSUTCDATETIME() THEN 0
              ELSE 1 END AS bit) AS [Expired],
    [ExpiresAt]
FROM @message;
